// Argo CD's application controller and repo server for `colocate simulate`, one binary: it runs
// argo-cd v2.10.15 cmd/argocd-repo-server/commands.NewCommand() when started as
// argocd-repo-server, else cmd/argocd-application-controller/commands.NewCommand(). go.mod copies
// the replace block of argo-cd's go.mod at that tag.
package main

import (
	"os"
	"path/filepath"

	controller "github.com/argoproj/argo-cd/v2/cmd/argocd-application-controller/commands"
	reposerver "github.com/argoproj/argo-cd/v2/cmd/argocd-repo-server/commands"
)

func main() {
	cmd := controller.NewCommand()
	if filepath.Base(os.Args[0]) == "argocd-repo-server" {
		cmd = reposerver.NewCommand()
	}
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
