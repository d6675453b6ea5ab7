package main

// Feature gates a cluster may turn on, as kube-scheduler's --feature-gates does. Only the gates
// `podsched simulate` models are accepted; every one not named is at its v1.37 default, so one
// cluster's gates never leak into the next in a batch.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/features"
)

// supportedGates: GenericWorkload (beta, off) brings PodGroups, the pod group scheduling cycle and
// pod-group preemption; PodGroupPreemptionPolicy (alpha, off) makes a PodGroup's own
// preemptionPolicy the group's.
var supportedGates = []featuregate.Feature{features.GenericWorkload, features.PodGroupPreemptionPolicy}

func supportedGateNames() []string {
	names := make([]string, len(supportedGates))
	for i, g := range supportedGates {
		names[i] = string(g)
	}
	return names
}

// parseFeatureGates reads "A=true,B=false" ("" is none).
func parseFeatureGates(text string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: missing =true or =false", part)
		}
		enabled, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%q: invalid value %q", part, value)
		}
		gates[strings.TrimSpace(name)] = enabled
	}
	return gates, nil
}

// setFeatureGates sets every supported gate: those named to their value, the others to default.
func setFeatureGates(gates map[string]bool) error {
	known := map[string]bool{}
	for _, g := range supportedGates {
		known[string(g)] = true
	}
	var unknown []string
	for name := range gates {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return badInput("feature gates %s: not supported (the oracle takes %s)", strings.Join(unknown, ", "),
			strings.Join(supportedGateNames(), ", "))
	}
	values := map[string]bool{}
	defaults := utilfeature.DefaultMutableFeatureGate.GetAll()
	for _, g := range supportedGates {
		values[string(g)] = defaults[g].Default
		if v, ok := gates[string(g)]; ok {
			values[string(g)] = v
		}
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(values); err != nil {
		return badInput("feature gates: %v", err)
	}
	return nil
}
