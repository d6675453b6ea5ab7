//go:build tools

// Package tools keeps `go mod tidy` from dropping the dependencies of the packages this module builds:
// upstream's scheduler_perf test packages (built with `go test -c`) and etcd's server.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/test/integration/scheduler_perf/default_preemption"
	_ "k8s.io/kubernetes/test/integration/scheduler_perf/misc"
	_ "k8s.io/kubernetes/test/integration/scheduler_perf/podgroup/gangscheduling"
)
