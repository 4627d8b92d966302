// etcd for `colocate simulate`: the server kubeadm 1.28 runs (constants.go DefaultEtcdVersion).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
