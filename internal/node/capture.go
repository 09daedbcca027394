package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/nmpolicy"
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
)

// CaptureVersion is status.capturedStates[].metaInfo.version: which evaluator captured.
const CaptureVersion = "nmoverlay/1"

// renderCaptures renders the desired state of each selected policy that has captures.
// Results kept on its enactment are reused as they are; the others are evaluated against
// the node's current state, read at most once per pass. A policy whose captures or
// references fail keeps the reason (Policy.CaptureError) and fails alone.
func (h *Handler) renderCaptures(ctx context.Context, v *nodeView, now time.Time) error {
	var current nmpolicy.Tree
	read := func() (nmpolicy.Tree, error) {
		if current != nil {
			return current, nil
		}
		if h.Show == nil {
			return nil, errCannotShow
		}
		s, err := h.Show(ctx)
		if err != nil {
			return nil, err
		}
		current, err = nmpolicy.ToTree(s)
		return current, err
	}
	for i := range v.selected {
		p := &v.selected[i]
		err := Capture(p, v.existing[p.Name], read, now)
		switch {
		case errors.Is(err, errCannotShow):
			p.CaptureError = "spec.capture: this handler cannot read the node's state to evaluate captures"
		case err != nil:
			return fmt.Errorf("reading the node's state for the captures of policy %s: %w", p.Name, err)
		}
	}
	return nil
}

var errCannotShow = errors.New("no reader of the node's state")

// Capture renders p's desired state with its captures, as the handler does: the results
// its enactment e keeps are reused as they are (a capture is evaluated once, at the
// policy's first apply on the node), the others evaluated against current, which is read
// only when one is needed. Captures that fail are p's CaptureError (and CaptureRetry when
// the node's state may still change that); the error is only current's.
func Capture(p *Policy, e *v1beta1.NodeNetworkConfigurationEnactment, current func() (nmpolicy.Tree, error), now time.Time) error {
	if len(p.Capture) == 0 {
		return nil
	}
	kept, cached := keptCaptures(e, p.Capture)
	var tree nmpolicy.Tree
	if len(cached) < len(p.Capture) {
		var err error
		if tree, err = current(); err != nil {
			return err
		}
	}
	captured, rendered, err := render(p, tree, kept, cached, now)
	if err != nil {
		p.CaptureError, p.CaptureRetry = err.Error(), wellFormed(p)
		return nil
	}
	p.Captured, p.DesiredState = captured, rendered
	return nil
}

// keptCaptures are the results of the policy's captures its enactment holds.
func keptCaptures(e *v1beta1.NodeNetworkConfigurationEnactment, captures map[string]string) (map[string]v1beta1.CapturedState, map[string]nmpolicy.Tree) {
	kept, cached := map[string]v1beta1.CapturedState{}, map[string]nmpolicy.Tree{}
	if e == nil {
		return kept, cached
	}
	for name, c := range e.Status.CapturedStates {
		if _, ok := captures[name]; !ok {
			continue
		}
		t, err := nmpolicy.ToTree([]byte(c.State.Raw))
		if err != nil {
			continue // unreadable: evaluated again
		}
		kept[name], cached[name] = c, t
	}
	return kept, cached
}

// render evaluates what is not cached and renders the desired state: the captured
// states to keep on the enactment, and the desired state to apply.
func render(p *Policy, current nmpolicy.Tree, kept map[string]v1beta1.CapturedState, cached map[string]nmpolicy.Tree, now time.Time) (map[string]v1beta1.CapturedState, []byte, error) {
	results, errs := nmpolicy.Evaluate(p.Capture, current, cached)
	if errs != nil {
		return nil, nil, errs.Within("spec.")
	}
	captured := map[string]v1beta1.CapturedState{}
	for _, name := range slices.Sorted(maps.Keys(results)) {
		if c, ok := kept[name]; ok {
			captured[name] = c
			continue
		}
		raw, err := json.Marshal(results[name])
		if err != nil {
			return nil, nil, err
		}
		captured[name] = v1beta1.CapturedState{State: shared.State{Raw: raw},
			MetaInfo: v1beta1.CaptureMetaInfo{Version: CaptureVersion, TimeStamp: metav1.NewTime(now).Rfc3339Copy()}}
	}
	rendered, errs := nmpolicy.RenderDocument(p.DesiredState, results)
	if errs != nil {
		return nil, nil, errs.Within("spec.desiredState.")
	}
	return captured, rendered, nil
}

// saveCaptures writes the captures of the policies about to be applied to their
// enactments before the apply, where they are not yet: a handler that died between the
// apply and its status write would otherwise evaluate them again, against the state its
// own change made (the default route already on the bridge).
func (h *Handler) saveCaptures(ctx context.Context, w *readyourwrites.Writes, v *nodeView, policies []string) error {
	for _, name := range policies {
		i := slices.IndexFunc(v.selected, func(p Policy) bool { return p.Name == name })
		if i < 0 || len(v.selected[i].Captured) == 0 {
			continue
		}
		p := &v.selected[i]
		if e, ok := v.existing[name]; ok && equality.Semantic.DeepEqual(e.Status.CapturedStates, p.Captured) {
			continue
		}
		e, err := h.patchStatus(ctx, w, v, name, func(e *v1beta1.NodeNetworkConfigurationEnactment) {
			e.Status.CapturedStates = p.Captured
		})
		if err != nil {
			return err
		}
		p.Captured = e.Status.CapturedStates // as stored: the status write compares with it
	}
	return nil
}

// captured are the capture results of a selected policy (nil for none).
func (v *nodeView) captured(policy string) map[string]v1beta1.CapturedState {
	for _, p := range v.selected {
		if p.Name == policy {
			return p.Captured
		}
	}
	return nil
}

// wellFormed says whether a policy's captures and references parse: if they do, what
// failed depends on the node's state, which may change.
func wellFormed(p *Policy) bool {
	if _, errs := nmpolicy.ParseAll(p.Capture); errs != nil {
		return false
	}
	tree, err := nmpolicy.DecodeDocument(p.DesiredState)
	if err != nil {
		return false
	}
	_, errs := nmpolicy.Check(tree, p.Capture)
	return errs == nil
}
