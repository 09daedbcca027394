// Command client links controller-runtime's client and cache only, not its manager (which
// brings leader election, client-go's typed clientset and informers, webhooks), and does
// nothing: read by BenchmarkHandlerRSS200.
package main

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	_ cache.Cache
	_ client.Client
)

func main() { time.Sleep(time.Hour) }
