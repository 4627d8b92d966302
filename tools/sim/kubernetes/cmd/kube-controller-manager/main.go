// kube-controller-manager for `colocate simulate`: the main of kubernetes v1.28.15
// cmd/kube-controller-manager/controller-manager.go, with the same imports (time zones for
// CronJobs, metrics and log formats).
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
