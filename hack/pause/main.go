// Command pause holds a pod's namespaces for the local cluster's containerd (its sandbox
// image; no registry serves one here): it sleeps until it is told to stop. The pods do not
// share their PID namespace, so it has no children to reap.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
