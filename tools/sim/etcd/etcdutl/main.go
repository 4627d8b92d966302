// etcdutl v3.5's command line (go.etcd.io/etcd/etcdutl/v3 main.go): snapshot restore and status.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
)

func main() {
	root := &cobra.Command{Use: "etcdutl", Short: "A simple command line tool for etcd.", SilenceUsage: true}
	root.AddCommand(etcdutl.NewSnapshotCommand(), etcdutl.NewVersionCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
