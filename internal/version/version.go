// Package version is nmoverlay's version: one for every binary and image built from a
// tree. The release is internal/version/RELEASE; a build between releases adds the commit,
// so two builds of different trees never report the same version.
package version

import (
	_ "embed"
	"runtime"
	"runtime/debug"
	"strings"
)

//go:embed RELEASE
var release string

// Version is this build's version. make build and hack/image.sh stamp it with
// hack/version.sh's (-ldflags "-X github.com/nmoverlay/nmoverlay/internal/version.Version=...");
// a build that was not stamped (go build, go install, go test) derives the same from what
// Go recorded of the build (Derive).
var Version string

// Revision is the commit built, "-dirty" appended when the tree had changes; "" when Go
// recorded none (go test, a build outside a git checkout).
var Revision string

func init() {
	info, _ := debug.ReadBuildInfo()
	if Revision == "" {
		Revision = revision(info)
	}
	if Version == "" {
		Version = Derive(Release(), info)
	}
}

// Release is the release this tree is, or leads to ("0.4.0-dev": between 0.3 and 0.4).
func Release() string { return strings.TrimSpace(release) }

// Derive is the version of a build of release, as hack/version.sh derives it from git:
// go install's module version when it is one (v0.4.0 is 0.4.0); the release alone when it
// is one (no pre-release suffix: the tree a release is tagged from); otherwise the
// release, the commit's first 12 digits and "-dirty" for a modified tree
// (0.4.0-dev-0123456789ab-dirty), which an image tag may hold as it is.
func Derive(release string, info *debug.BuildInfo) string {
	if info != nil && strings.HasPrefix(info.Main.Version, "v") && info.Main.Version != "(devel)" &&
		!strings.Contains(info.Main.Version, "+dirty") {
		return strings.TrimPrefix(info.Main.Version, "v")
	}
	if !strings.Contains(release, "-") {
		return release
	}
	rev := revision(info)
	if rev == "" {
		return release
	}
	dirty := strings.HasSuffix(rev, "-dirty")
	rev = strings.TrimSuffix(rev, "-dirty")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := release + "-" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}

// revision is the commit Go recorded (-buildvcs), "-dirty" appended for a modified tree.
func revision(info *debug.BuildInfo) string {
	if info == nil {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "-dirty"
	}
	return rev
}

// String is the version as the commands print it: the version, the commit and the Go
// release that built it.
func String(command string) string {
	s := command + " " + Version
	if Revision != "" {
		s += " (commit " + Revision + ")"
	}
	return s + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// Engine is what applies policies on a node, as the NodeNetworkState names it where
// kubernetes-nmstate puts nmstatectl's version: nmoverlay's release and the backend.
func Engine(backend string) string {
	return "nmoverlay " + Version + " (" + backend + ")"
}
