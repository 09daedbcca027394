// Package version is nmoverlay's release, as its components report it (the
// NodeNetworkState's handlerNmstateVersion).
package version

// Version is the release this tree builds. A build may set it:
// -ldflags "-X github.com/nmoverlay/nmoverlay/internal/version.Version=...".
var Version = "0.3.0-dev"

// Engine is what applies policies on a node, as the NodeNetworkState names it where
// kubernetes-nmstate puts nmstatectl's version: nmoverlay's release and the backend.
func Engine(backend string) string {
	return "nmoverlay " + Version + " (" + backend + ")"
}
