// Package node is the per-node handler: it applies every policy that selects its node
// through its backend in one transaction, reports one enactment per policy, re-applies
// everything after each boot, and refuses while the node's overlay is degraded.
package node

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Policy is what the handler needs of a NodeNetworkConfigurationPolicy.
type Policy struct {
	Name         string
	Generation   int64
	NodeSelector map[string]string
	// Capture is spec.capture. DesiredState is rendered with its results (Captured: from
	// the enactment, or evaluated by this pass), or CaptureError says why it could not be.
	Capture      map[string]string
	DesiredState []byte
	Captured     map[string]v1beta1.CapturedState
	CaptureError string
	// Refused: the backend's own check refused the desired state (Backend.Check).
	Refused string
	// CaptureRetry: the captures are well formed but found nothing on the node yet (no
	// LLDP neighbour heard, no default route): evaluated again after captureRetry.
	CaptureRetry bool
	// MaxUnavailable bounds how many of the selected nodes apply a new generation at once.
	MaxUnavailable *intstr.IntOrString
}

// PolicyOf is p as the handler reads it (its captures not rendered yet).
func PolicyOf(p *nmstatev1.NodeNetworkConfigurationPolicy) Policy {
	return Policy{Name: p.Name, Generation: p.Generation, NodeSelector: p.Spec.NodeSelector,
		Capture: p.Spec.Capture, DesiredState: p.Spec.DesiredState.Raw, MaxUnavailable: p.Spec.MaxUnavailable}
}

// Selects reports whether the policy applies to a node with these labels.
func (p Policy) Selects(nodeLabels map[string]string) bool {
	return shared.SelectsNode(p.NodeSelector, nodeLabels)
}

// Composition is what to do on one node.
type Composition struct {
	// Apply is the merged desired state of every valid, non-conflicting selected policy.
	Apply backend.Desired
	// Applied names the policies Apply is made of.
	Applied []string
	// Owners names, for each interface of Apply, the policies that state it.
	Owners map[string][]string
	// Failed maps a selected policy to why it is not applied (invalid, unsupported,
	// conflicting with another policy).
	Failed map[string]string
}

// Compose parses and merges the policies selected for a node in the backend's schema. One
// bad policy never blocks the others: an invalid one fails alone, two that conflict fail
// together (each message names the other), and the rest are merged and applied.
func Compose(schema backend.Schema, selected []Policy) Composition {
	p := Composition{Failed: map[string]string{}}
	var sources []backend.Parsed
	for _, pol := range selected {
		if pol.CaptureError != "" {
			p.Failed[pol.Name] = pol.CaptureError
			continue
		}
		if pol.Refused != "" {
			p.Failed[pol.Name] = pol.Refused
			continue
		}
		s, err := schema.Parse(pol.DesiredState)
		if err != nil {
			p.Failed[pol.Name] = "spec.desiredState: " + err.Error()
			continue
		}
		sources = append(sources, backend.Parsed{Policy: pol.Name, State: s})
	}
	for len(sources) > 0 {
		desired, owners, err := schema.Merge(sources)
		var conflicts state.Conflicts
		if errors.As(err, &conflicts) {
			bad := map[string]bool{}
			for _, c := range conflicts {
				for _, pol := range c.Policies {
					bad[pol] = true
					p.Failed[pol] = appendMessage(p.Failed[pol], "spec.desiredState."+c.Error())
				}
			}
			var keep []backend.Parsed
			for _, s := range sources {
				if !bad[s.Policy] {
					keep = append(keep, s)
				}
			}
			sources = keep
			continue
		}
		if err != nil { // not a conflict: nothing can be applied together
			for _, s := range sources {
				p.Failed[s.Policy] = "spec.desiredState: " + err.Error()
			}
			return p
		}
		p.Apply, p.Owners = desired, owners
		for _, s := range sources {
			p.Applied = append(p.Applied, s.Policy)
		}
		sort.Strings(p.Applied)
		return p
	}
	return p
}

func appendMessage(prev, msg string) string {
	if prev == "" {
		return msg
	}
	if strings.Contains(prev, msg) {
		return prev
	}
	return fmt.Sprintf("%s; %s", prev, msg)
}

// suspectsOf are the policies a failed change is blamed on; the others are innocent until
// tried without them, at once. Blamed are, among the policies new in the change (isNew):
// those stating an interface that would not activate (a DHCP server that never answers
// fails its own policy, not the node's others), else those that had failed before at
// this generation (failedBefore). A backend that refused policies before any change
// (*backend.PoliciesRefused) names them. None when nothing points anywhere: all new ones fail.
// Trying the rest again is safe: it is the same transaction less the suspects, checked
// and rolled back like any other.
func suspectsOf(applyErr error, apply Composition, isNew, failedBefore func(string) bool) map[string]bool {
	suspects := map[string]bool{}
	if applyErr == nil {
		return suspects
	}
	var refused *backend.PoliciesRefused
	if errors.As(applyErr, &refused) {
		for name := range refused.Reasons {
			if isNew(name) {
				suspects[name] = true
			}
		}
		if len(suspects) > 0 {
			return suspects
		}
	}
	var ae *backend.ApplyError
	if errors.As(applyErr, &ae) {
		for _, iface := range ae.Interfaces {
			for _, name := range apply.Owners[iface] {
				if isNew(name) {
					suspects[name] = true
				}
			}
		}
		if len(suspects) > 0 {
			return suspects
		}
	}
	for _, name := range apply.Applied {
		if isNew(name) && failedBefore(name) {
			suspects[name] = true
		}
	}
	return suspects
}
