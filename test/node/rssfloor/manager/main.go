// Command manager links what cmd/handler links of controller-runtime (its manager, client
// and cache) and does nothing: the floor of the handler's memory, read by
// BenchmarkHandlerRSS200 beside the handler's.
package main

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.Manager

func main() { time.Sleep(time.Hour) }
