// Command etcd is etcd's own server at the version k8s.io/kubernetes requires: upstream's integration
// framework starts it from PATH for scheduler_perf.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
