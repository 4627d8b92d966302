// etcdctl v3.5 (go.etcd.io/etcd/etcdctl/v3 main.go).
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() { ctlv3.MustStart() }
