// Command clientgo links client-go's REST client and informers and the core/v1 types,
// without controller-runtime (whose client registers every API group of client-go's
// scheme), and does nothing: read by BenchmarkHandlerRSS200.
package main

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var (
	_ rest.Interface
	_ cache.SharedIndexInformer
	_ corev1.Node
)

func main() { time.Sleep(time.Hour) }
