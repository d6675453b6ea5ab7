package main

// Reading manifests and playing the apiserver's defaulting, validation (the part that matters here)
// and the Priority admission plugin, so the scheduler sees objects as a real cluster would store them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	schedulingv1defaults "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	schedulingv1beta1defaults "k8s.io/kubernetes/pkg/apis/scheduling/v1beta1"
	"k8s.io/kubernetes/pkg/features"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// inputError is bad input: the oracle exits with code 2.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// manifest is one decoded object with where it came from, for error messages.
type manifest struct {
	source string // "file.yaml, document 3"
	obj    runtime.Object
}

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// decodeFile splits a file into its objects: multi-document YAML, JSON, and kind: List (nested).
func decodeFile(name string, data []byte) ([]manifest, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	for doc := 1; ; doc++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badInput("%s: document %d: %v", name, doc, err)
		}
		if isBlankDocument(chunk) {
			continue
		}
		jsonData, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, badInput("%s: document %d: %v", name, doc, err)
		}
		objs, err := decodeDocument(fmt.Sprintf("%s: document %d", name, doc), jsonData)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func isBlankDocument(chunk []byte) bool {
	for _, line := range strings.Split(string(chunk), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && line != "---" {
			return false
		}
	}
	return true
}

func decodeDocument(source string, data []byte) ([]manifest, error) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	var tm typeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, badInput("%s: not an object: %v", source, err)
	}
	if tm.Kind == "" {
		return nil, badInput("%s: kind: Required value", source)
	}
	if tm.APIVersion == "" {
		return nil, badInput("%s: %s: apiVersion: Required value", source, tm.Kind)
	}
	if tm.Kind == "List" || strings.HasSuffix(tm.Kind, "List") && tm.APIVersion == "v1" {
		var out []manifest
		for i, item := range tm.Items {
			objs, err := decodeDocument(fmt.Sprintf("%s, items[%d]", source, i), item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	var obj runtime.Object
	switch tm.APIVersion + "/" + tm.Kind {
	case "v1/Pod":
		obj = &v1.Pod{}
	case "v1/Node":
		obj = &v1.Node{}
	case "scheduling.k8s.io/v1/PriorityClass":
		obj = &schedulingv1.PriorityClass{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "scheduling.k8s.io/v1beta1/PodGroup":
		obj = &schedulingv1beta1.PodGroup{}
	default:
		return nil, badInput("%s: kind %q of apiVersion %q is not supported (the oracle takes v1 Pod and Node, "+
			"scheduling.k8s.io/v1 PriorityClass, policy/v1 PodDisruptionBudget, scheduling.k8s.io/v1beta1 PodGroup)",
			source, tm.Kind, tm.APIVersion)
	}
	strict, err := kjson.UnmarshalStrict(data, obj)
	if err != nil {
		// A bad quantity's error does not say where it is: find it.
		if field := badQuantity(data); field != "" {
			return nil, badInput("%s: %s %s: %s: %v", source, tm.Kind, nameFromJSON(data), field, err)
		}
		return nil, badInput("%s: %s %s: %v", source, tm.Kind, nameFromJSON(data), err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, badInput("%s: %s %s: %s", source, tm.Kind, nameFromJSON(data), strings.Join(msgs, "; "))
	}
	return []manifest{{source: source, obj: obj}}, nil
}

// badQuantity names the first resource quantity in a Pod or Node that does not parse ("" if none).
func badQuantity(data []byte) string {
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return ""
	}
	check := func(path string, list any) string {
		m, _ := list.(map[string]any)
		for name, v := range m {
			text := fmt.Sprint(v)
			if _, err := resource.ParseQuantity(text); err != nil {
				return fmt.Sprintf("%s[%s]: Invalid value: %q", path, name, text)
			}
		}
		return ""
	}
	get := func(m any, key string) any {
		if mm, ok := m.(map[string]any); ok {
			return mm[key]
		}
		return nil
	}
	status := get(doc, "status")
	for _, key := range []string{"capacity", "allocatable"} {
		if bad := check("status."+key, get(status, key)); bad != "" {
			return bad
		}
	}
	spec := get(doc, "spec")
	if bad := check("spec.overhead", get(spec, "overhead")); bad != "" {
		return bad
	}
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := get(spec, list).([]any)
		for i, c := range containers {
			for _, kind := range []string{"requests", "limits"} {
				path := fmt.Sprintf("spec.%s[%d].resources.%s", list, i, kind)
				if bad := check(path, get(get(c, "resources"), kind)); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

func nameFromJSON(data []byte) string {
	var m struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &m)
	if m.Metadata.Namespace != "" {
		return fmt.Sprintf("%q", m.Metadata.Namespace+"/"+m.Metadata.Name)
	}
	return fmt.Sprintf("%q", m.Metadata.Name)
}

// --- admission -------------------------------------------------------------------------------

const highestUserDefinablePriority = 1000000000

// The classes every apiserver creates at start-up.
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// admit validates and completes one object as the apiserver would on create; s supplies the
// priority classes already stored.
func (s *apiServer) admit(m manifest) (runtime.Object, error) {
	switch obj := m.obj.(type) {
	case *schedulingv1.PriorityClass:
		return s.admitPriorityClass(m.source, obj)
	case *v1.Node:
		return admitNode(m.source, obj)
	case *v1.Pod:
		return s.admitPod(m.source, obj)
	case *policyv1.PodDisruptionBudget:
		return admitPDB(m.source, obj)
	case *schedulingv1beta1.PodGroup:
		return s.admitPodGroup(m.source, obj)
	}
	return nil, badInput("%s: unsupported object", m.source)
}

func checkName(source, kind string, meta *metav1.ObjectMeta, namespaced bool) error {
	if meta.Name == "" {
		return badInput("%s: %s: metadata.name: Required value", source, kind)
	}
	if meta.DeletionTimestamp != nil {
		return badInput("%s: %s %q: metadata.deletionTimestamp: may not be set on create", source, kind, meta.Name)
	}
	if namespaced && meta.Namespace == "" {
		meta.Namespace = "default"
	}
	if !namespaced && meta.Namespace != "" {
		meta.Namespace = "" // cluster-scoped: the apiserver ignores it
	}
	meta.ResourceVersion = ""
	return nil
}

func (s *apiServer) admitPriorityClass(source string, pc *schedulingv1.PriorityClass) (runtime.Object, error) {
	if err := checkName(source, "PriorityClass", &pc.ObjectMeta, false); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s: PriorityClass %q", source, pc.Name)
	if _, ok := systemPriorityClasses[pc.Name]; ok || strings.HasPrefix(pc.Name, "system-") {
		return nil, badInput("%s: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved", where)
	}
	if pc.Value > highestUserDefinablePriority {
		return nil, badInput("%s: value: Forbidden: maximum allowed value of a user defined priority is %d", where, highestUserDefinablePriority)
	}
	if pc.PreemptionPolicy != nil && *pc.PreemptionPolicy != v1.PreemptLowerPriority && *pc.PreemptionPolicy != v1.PreemptNever {
		return nil, badInput("%s: preemptionPolicy: Unsupported value: %q", where, *pc.PreemptionPolicy)
	}
	if pc.GlobalDefault {
		for _, other := range s.priorityClasses() {
			if other.GlobalDefault {
				return nil, badInput("%s: globalDefault: Forbidden: PriorityClass %q is already marked as default. Only one default can exist", where, other.Name)
			}
		}
	}
	schedulingv1defaults.SetObjectDefaults_PriorityClass(pc)
	return pc, nil
}

func admitNode(source string, node *v1.Node) (runtime.Object, error) {
	if err := checkName(source, "Node", &node.ObjectMeta, false); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s: Node %q", source, node.Name)
	for _, list := range []struct {
		field string
		rl    v1.ResourceList
	}{{"status.capacity", node.Status.Capacity}, {"status.allocatable", node.Status.Allocatable}} {
		for name, q := range list.rl {
			if q.Sign() < 0 {
				return nil, badInput("%s: %s[%s]: Invalid value: %q: must be greater than or equal to 0", where, list.field, name, q.String())
			}
		}
	}
	// The kubelet reports allocatable; with no reservations it is the capacity, resource by
	// resource, and a kubelet's default maximum of 110 pods when neither names pods.
	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = v1.ResourceList{}
	}
	if _, ok := node.Status.Capacity[v1.ResourcePods]; !ok {
		if _, ok := node.Status.Allocatable[v1.ResourcePods]; !ok {
			node.Status.Capacity[v1.ResourcePods] = resource.MustParse("110")
		}
	}
	for name, q := range node.Status.Capacity {
		if _, ok := node.Status.Allocatable[name]; !ok {
			node.Status.Allocatable[name] = q.DeepCopy()
		}
	}
	corev1defaults.SetObjectDefaults_Node(node)
	return node, nil
}

func (s *apiServer) admitPod(source string, pod *v1.Pod) (runtime.Object, error) {
	if err := checkName(source, "Pod", &pod.ObjectMeta, true); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s: Pod %q", source, pod.Namespace+"/"+pod.Name)
	if len(pod.Spec.Containers) == 0 {
		return nil, badInput("%s: spec.containers: Required value", where)
	}
	for i, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == "" {
			return nil, badInput("%s: container %d: name: Required value", where, i)
		}
		for _, rl := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for name, q := range rl {
				if q.Sign() < 0 {
					return nil, badInput("%s: container %q: resources[%s]: Invalid value: %q: must be greater than or equal to 0", where, c.Name, name, q.String())
				}
			}
		}
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds < 0 {
		return nil, badInput("%s: spec.terminationGracePeriodSeconds: Invalid value: %d: must be greater than or equal to 0", where, *pod.Spec.TerminationGracePeriodSeconds)
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != v1.PreemptLowerPriority && *pod.Spec.PreemptionPolicy != v1.PreemptNever {
		return nil, badInput("%s: spec.preemptionPolicy: Unsupported value: %q", where, *pod.Spec.PreemptionPolicy)
	}
	// Defaulting first (requests from limits, schedulerName, terminationGracePeriodSeconds, ...),
	// then the Priority admission plugin, as in the apiserver.
	corev1defaults.SetObjectDefaults_Pod(pod)
	className, priority, policy, err := s.establishPriority(where, pod.Spec.PriorityClassName)
	if err != nil {
		return nil, err
	}
	pod.Spec.PriorityClassName = className
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return nil, badInput("%s: spec.priority: Forbidden: the integer value of priority (%d) must not be provided in pod spec; "+
			"priority admission controller computed %d from the given PriorityClass name", where, *pod.Spec.Priority, priority)
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return nil, badInput("%s: spec.preemptionPolicy: Forbidden: the string value of PreemptionPolicy (%s) must not be provided in pod spec; "+
				"priority admission controller computed %s from the given PriorityClass name", where, *pod.Spec.PreemptionPolicy, *policy)
		}
		p := *policy
		pod.Spec.PreemptionPolicy = &p
	}
	// A pod with spec.nodeName is already running (its kubelet started it); others wait, keeping a
	// status.nominatedNodeName they may carry.
	if pod.Spec.NodeName != "" {
		pod.Status.Phase = v1.PodRunning
		if pod.Status.StartTime == nil {
			now := s.now(0)
			pod.Status.StartTime = &now
		}
		setCondition(&pod.Status, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: *pod.Status.StartTime})
	} else {
		pod.Status.Phase = v1.PodPending
	}
	return pod, nil
}

// establishPriority is the Priority admission plugin's: the named class (a system class, or one
// stored), or with no name the globalDefault class, or priority 0 and PreemptLowerPriority.
func (s *apiServer) establishPriority(where, name string) (string, int32, *v1.PreemptionPolicy, error) {
	lower := v1.PreemptLowerPriority
	if name == "" {
		if def := s.defaultPriorityClass(); def != nil {
			return def.Name, def.Value, def.PreemptionPolicy, nil
		}
		return "", 0, &lower, nil
	}
	if value, ok := systemPriorityClasses[name]; ok {
		return name, value, &lower, nil
	}
	obj, ok := s.get(classesGVR, objectKey{"", name})
	if !ok {
		return "", 0, nil, badInput("%s: spec.priorityClassName: Forbidden: no PriorityClass with name %s was found", where, name)
	}
	pc := obj.(*schedulingv1.PriorityClass)
	return pc.Name, pc.Value, pc.PreemptionPolicy, nil
}

// admitPodGroup: the apiserver serves PodGroups only with GenericWorkload; defaulting
// (disruptionMode single, preemptionPolicy with PodGroupPreemptionPolicy), then the Priority
// admission plugin's admitPodGroup.
func (s *apiServer) admitPodGroup(source string, pg *schedulingv1beta1.PodGroup) (runtime.Object, error) {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil, badInput("%s: PodGroup: the server could not find the requested resource (the GenericWorkload feature gate is off)", source)
	}
	if err := checkName(source, "PodGroup", &pg.ObjectMeta, true); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s: PodGroup %q", source, pg.Namespace+"/"+pg.Name)
	policy := pg.Spec.SchedulingPolicy
	if (policy.Basic == nil) == (policy.Gang == nil) {
		return nil, badInput("%s: spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set", where)
	}
	if policy.Gang != nil && policy.Gang.MinCount < 1 {
		return nil, badInput("%s: spec.schedulingPolicy.gang.minCount: Invalid value: %d: must be greater than zero", where, policy.Gang.MinCount)
	}
	if mode := pg.Spec.DisruptionMode; mode != nil && (mode.Single == nil) == (mode.All == nil) {
		return nil, badInput("%s: spec.disruptionMode: Invalid value: exactly one of single or all must be set", where)
	}
	schedulingv1beta1defaults.SetObjectDefaults_PodGroup(pg)
	className, priority, classPolicy, err := s.establishPriority(where, pg.Spec.PriorityClassName)
	if err != nil {
		return nil, err
	}
	if pg.Spec.Priority != nil && *pg.Spec.Priority != priority {
		return nil, badInput("%s: spec.priority: Forbidden: priority set in the pod group (%d) must match the priority computed (%d) "+
			"based on the priority class set in the spec", where, *pg.Spec.Priority, priority)
	}
	pg.Spec.Priority = &priority
	pg.Spec.PriorityClassName = className
	if utilfeature.DefaultFeatureGate.Enabled(features.PodGroupPreemptionPolicy) && classPolicy != nil {
		computed := schedulingv1beta1.PreemptionPolicy(*classPolicy)
		if pg.Spec.PreemptionPolicy != nil && *pg.Spec.PreemptionPolicy != computed {
			return nil, badInput("%s: spec.preemptionPolicy: Forbidden: the string value of PreemptionPolicy (%s) must not be provided in pod group spec; "+
				"priority admission controller computed %s from the given PriorityClass name", where, *pg.Spec.PreemptionPolicy, computed)
		}
		pg.Spec.PreemptionPolicy = &computed
	}
	pg.Status = schedulingv1beta1.PodGroupStatus{}
	return pg, nil
}

func admitPDB(source string, pdb *policyv1.PodDisruptionBudget) (runtime.Object, error) {
	if err := checkName(source, "PodDisruptionBudget", &pdb.ObjectMeta, true); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s: PodDisruptionBudget %q", source, pdb.Namespace+"/"+pdb.Name)
	if pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable != nil {
		return nil, badInput("%s: spec: Invalid value: minAvailable and maxUnavailable cannot be both set", where)
	}
	for field, v := range map[string]*intstr.IntOrString{"spec.minAvailable": pdb.Spec.MinAvailable, "spec.maxUnavailable": pdb.Spec.MaxUnavailable} {
		if v == nil {
			continue
		}
		if v.Type == intstr.Int && v.IntVal < 0 {
			return nil, badInput("%s: %s: Invalid value: %d: must be greater than or equal to 0", where, field, v.IntVal)
		}
		if v.Type == intstr.String {
			if _, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true); err != nil || !strings.HasSuffix(v.StrVal, "%") {
				return nil, badInput("%s: %s: Invalid value: %q: must be an integer or a percentage", where, field, v.StrVal)
			}
		}
	}
	if pdb.Spec.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil {
			return nil, badInput("%s: spec.selector: Invalid value: %v", where, err)
		}
	}
	if pdb.Generation == 0 {
		pdb.Generation = 1
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{}
	return pdb, nil
}

func (s *apiServer) priorityClasses() []*schedulingv1.PriorityClass {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*schedulingv1.PriorityClass
	for _, k := range s.sortedKeys(classesGVR) {
		out = append(out, s.objects[classesGVR][k].(*schedulingv1.PriorityClass))
	}
	return out
}

// defaultPriorityClass is the globalDefault class (the lowest value if several, as the admission
// plugin picks).
func (s *apiServer) defaultPriorityClass() *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for _, pc := range s.priorityClasses() {
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def
}
