package shared

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectsNode(t *testing.T) {
	node := map[string]string{"kubernetes.io/hostname": "w1", "node-role.kubernetes.io/worker": ""}
	for _, tc := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{}, true},
		{map[string]string{"kubernetes.io/hostname": "w1"}, true},
		{map[string]string{"node-role.kubernetes.io/worker": ""}, true},
		{map[string]string{"kubernetes.io/hostname": "w2"}, false},
		{map[string]string{"node-role.kubernetes.io/master": ""}, false},
		{map[string]string{"kubernetes.io/hostname": "w1", "missing": "x"}, false},
	} {
		if got := SelectsNode(tc.sel, node); got != tc.want {
			t.Errorf("SelectsNode(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestSetExclusive(t *testing.T) {
	var conds []metav1.Condition
	SetExclusive(&conds, EnactmentTypes, EnactmentFailing, ReasonFailedToConfigure, "boom", 3)
	if len(conds) != len(EnactmentTypes) {
		t.Fatalf("%d conditions, want %d", len(conds), len(EnactmentTypes))
	}
	if !TrueWith(conds, EnactmentFailing, "boom") || !IsTrue(conds, EnactmentFailing, ReasonFailedToConfigure) {
		t.Errorf("Failing not True with its message: %+v", conds)
	}
	for _, typ := range []string{EnactmentAvailable, EnactmentProgressing, EnactmentPending, EnactmentAborted} {
		if IsTrue(conds, typ, "") {
			t.Errorf("%s True beside Failing", typ)
		}
	}
	if IsTrue(conds, EnactmentFailing, ReasonSuccessfullyConfigured) {
		t.Error("IsTrue ignored the reason")
	}
	SetExclusive(&conds, EnactmentTypes, EnactmentAvailable, ReasonSuccessfullyConfigured, "ok", 3)
	if !TrueWith(conds, EnactmentAvailable, "ok") || IsTrue(conds, EnactmentFailing, "") {
		t.Errorf("Available did not replace Failing: %+v", conds)
	}
}
