// Package machineconfigs renders the MachineConfigs (machineconfiguration.openshift.io/v1,
// Ignition 3.x) that put NetworkManager's keyfile dir on the nmoverlay overlay, one per
// MachineConfigPool. Options are typed and validated; every error names the field. Every
// path, unit name and file content comes from package overlay, the one definition shared
// with the host helper.
package machineconfigs

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// MachineConfig API identity, the labels this project sets and the object name.
const (
	APIVersion = "machineconfiguration.openshift.io/v1"
	Kind       = "MachineConfig"
	// RoleLabel selects the MachineConfigPool; its value is the pool name.
	RoleLabel      = "machineconfiguration.openshift.io/role"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "nmoverlay"
	// NameFormat is the MachineConfig's name for a pool. The 99- prefix sorts it after the
	// platform's own MachineConfigs, as MCO recommends for additions.
	NameFormat = "99-%s-nmoverlay"
	// DefaultIgnitionVersion is accepted by every MCO from OCP 4.6 on.
	DefaultIgnitionVersion = "3.2.0"
)

// Name is the MachineConfig's name for a pool.
func Name(pool string) string { return fmt.Sprintf(NameFormat, pool) }

// SupportedIgnitionVersions are the spec versions MCO accepts that this renderer emits:
// 3.2.0 (OCP 4.6+), 3.4.0 (4.13+), 3.5.0 (4.19+). No MCO accepts 3.6.0 (experimental).
var SupportedIgnitionVersions = []string{"3.2.0", "3.4.0", "3.5.0"}

// BuiltinPools exist on every cluster; others must be declared as CustomPools.
var BuiltinPools = []string{"master", "worker"}

// Options say what to render.
type Options struct {
	// Pools are the MachineConfigPools to render for, one MachineConfig each.
	Pools []string
	// CustomPools are pools besides master and worker that the administrator created. A
	// MachineConfig for a pool that does not exist is silently ignored by MCO, so a pool
	// name must be built in or declared here.
	CustomPools []string
	// IgnitionVersion of the rendered config; DefaultIgnitionVersion when empty.
	IgnitionVersion string
	// Layout of the overlay on the host; paths.DefaultLayout() when zero.
	Layout paths.Layout
	// SafetyOptions for the mount, a subset of paths.SafetyOptions; all of them when
	// nil, none when empty (non-nil).
	SafetyOptions []string
}

// WithDefaults fills in what is unset.
func (o Options) WithDefaults() Options {
	if o.IgnitionVersion == "" {
		o.IgnitionVersion = DefaultIgnitionVersion
	}
	if o.Layout == (paths.Layout{}) {
		o.Layout = paths.DefaultLayout()
	}
	if o.SafetyOptions == nil {
		o.SafetyOptions = slices.Clone(paths.SafetyOptions)
	}
	return o
}

// Validate reports the first option that cannot be rendered, as a *field.Error naming its path.
func (o Options) Validate() error {
	o = o.WithDefaults()
	for i, p := range o.CustomPools {
		path := fmt.Sprintf("customPools[%d]", i)
		if err := checkPoolName(path, p); err != nil {
			return err
		}
		if slices.Contains(o.CustomPools[:i], p) {
			return &field.Error{Path: path, Reason: fmt.Sprintf("%q is listed twice", p)}
		}
	}
	if len(o.Pools) == 0 {
		return &field.Error{Path: "pools", Reason: "no pool given (want master, worker or a declared custom pool)"}
	}
	for i, p := range o.Pools {
		path := fmt.Sprintf("pools[%d]", i)
		if err := checkPoolName(path, p); err != nil {
			return err
		}
		if slices.Contains(o.Pools[:i], p) {
			return &field.Error{Path: path, Reason: fmt.Sprintf("%q is listed twice", p)}
		}
		if !slices.Contains(BuiltinPools, p) && !slices.Contains(o.CustomPools, p) {
			return &field.Error{Path: path, Reason: fmt.Sprintf("%q is not master or worker and not declared as a custom pool (--custom-pool); "+
				"MCO silently ignores a MachineConfig for a pool that does not exist", p)}
		}
	}
	if !slices.Contains(SupportedIgnitionVersions, o.IgnitionVersion) {
		return &field.Error{Path: "ignitionVersion", Reason: fmt.Sprintf("%q is not supported (want one of %v: MCO accepts 3.2.0 on OCP 4.6+, "+
			"3.4.0 on 4.13+, 3.5.0 on 4.19+)", o.IgnitionVersion, SupportedIgnitionVersions)}
	}
	if err := o.Layout.Validate(); err != nil {
		if fe, ok := err.(*field.Error); ok {
			return &field.Error{Path: "layout." + fe.Path, Reason: fe.Reason}
		}
		return &field.Error{Path: "layout", Reason: err.Error()}
	}
	for i, s := range o.SafetyOptions {
		path := fmt.Sprintf("safetyOptions[%d]", i)
		if !slices.Contains(paths.SafetyOptions, s) {
			return &field.Error{Path: path, Reason: fmt.Sprintf("%q is not one of %v", s, paths.SafetyOptions)}
		}
		if slices.Contains(o.SafetyOptions[:i], s) {
			return &field.Error{Path: path, Reason: fmt.Sprintf("%q is listed twice", s)}
		}
	}
	return nil
}

func checkPoolName(path, p string) error {
	if errs := validation.IsDNS1123Label(p); len(errs) > 0 {
		return &field.Error{Path: path, Reason: fmt.Sprintf("%q is not a valid pool name (a DNS-1123 label): %s", p, strings.Join(errs, "; "))}
	}
	return nil
}
