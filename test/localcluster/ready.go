package localcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ReadyLog is every change of the nodes' Ready conditions seen since it started, as the
// kubelets and the node-lifecycle controller wrote them: a spec asserting a node stayed
// Ready says from it who flipped the condition and why.
type ReadyLog struct {
	mu      sync.Mutex
	last    map[string]string
	changes []string
}

// RecordReady starts a ReadyLog that records until ctx ends.
func (c *Cluster) RecordReady(ctx context.Context) (*ReadyLog, error) {
	cs, err := kubernetes.NewForConfig(c.env.Config)
	if err != nil {
		return nil, err
	}
	l := &ReadyLog{last: map[string]string{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	record := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			l.record(n)
		}
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil, fmt.Errorf("the node informer (%v) did not sync", typ)
		}
	}
	return l, nil
}

func (l *ReadyLog) record(n *corev1.Node) {
	for _, cond := range n.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			continue
		}
		state := fmt.Sprintf("%s %s: %s (since %s)", cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime.UTC().Format(time.RFC3339))
		l.mu.Lock()
		if l.last[n.Name] != state {
			l.last[n.Name] = state
			l.changes = append(l.changes, fmt.Sprintf("%s %s: %s", time.Now().UTC().Format("15:04:05.000"), n.Name, state))
		}
		l.mu.Unlock()
	}
}

// String is the changes in the order seen, a line each.
func (l *ReadyLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.changes, "\n")
}
