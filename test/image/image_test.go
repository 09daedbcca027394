//go:build image

// The image tier: hack/image.sh builds the container image with buildah (FROM scratch, the
// static binaries), and the specs check it against what deploy/ asks of it: every command a
// manifest names is in the image, static and runs there, and the image's user satisfies
// runAsNonRoot. Root only (buildah's storage in /var/lib/containers).
package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func TestImage(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "image tier: buildah")
}

// A container of a deploy/ workload that runs nmoverlay's image.
type container struct {
	where string // "DaemonSet/nmoverlay-handler initContainer install-nm-overlay", for messages
	init  bool
	pod   corev1.PodSpec
	corev1.Container
}

// kustomization is what manifestContainers reads of one.
type kustomization struct {
	dir       string
	Resources []string `json:"resources"`
	Images    []struct {
		Name string `json:"name"`
	} `json:"images"`
}

func readKustomization(dir string) kustomization {
	k := kustomization{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(b, &k)).To(Succeed())
	return k
}

// manifestContainers reads the workloads deploy/kustomization.yaml lists (the operator's)
// and deploy/operand/kustomization.yaml (what the operator deploys) and returns their
// containers that run the image deploy/kustomization.yaml's images: entry names
// ("nmoverlay").
func manifestContainers() []container {
	top := readKustomization("../../deploy")
	ours := map[string]bool{}
	for _, i := range top.Images {
		ours[i.Name] = true
	}
	Expect(ours).NotTo(BeEmpty(), "deploy/kustomization.yaml names no image")

	var cs []container
	for _, k := range []kustomization{top, readKustomization("../../deploy/operand")} {
		cs = append(cs, workloadContainers(k, ours)...)
	}
	return cs
}

func workloadContainers(k kustomization, ours map[string]bool) []container {
	var cs []container
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(k.dir, r))
		Expect(err).NotTo(HaveOccurred())
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred(), r)
			// Every workload kind but CronJob keeps its pod under spec.template.
			var o struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					Template *corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			Expect(yaml.Unmarshal(doc, &o)).To(Succeed(), r)
			if o.Spec.Template == nil {
				continue
			}
			pod := o.Spec.Template.Spec
			for i, list := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
				for _, c := range list {
					if !ours[c.Image] {
						continue
					}
					kind := map[bool]string{true: "initContainer", false: "container"}[i == 0]
					cs = append(cs, container{where: fmt.Sprintf("%s/%s %s %s", o.Kind, o.Metadata.Name, kind, c.Name),
						init: i == 0, pod: pod, Container: c})
				}
			}
		}
	}
	return cs
}

// runAs is the user a container runs as: its own securityContext, else the pod's, else nil
// (the image's USER).
func (c container) runAs() (uid, gid *int64) {
	if p := c.pod.SecurityContext; p != nil {
		uid, gid = p.RunAsUser, p.RunAsGroup
	}
	if s := c.SecurityContext; s != nil {
		if s.RunAsUser != nil {
			uid = s.RunAsUser
		}
		if s.RunAsGroup != nil {
			gid = s.RunAsGroup
		}
	}
	return uid, gid
}

func (c container) runAsNonRoot() bool {
	if s := c.SecurityContext; s != nil && s.RunAsNonRoot != nil {
		return *s.RunAsNonRoot
	}
	return c.pod.SecurityContext != nil && c.pod.SecurityContext.RunAsNonRoot != nil && *c.pod.SecurityContext.RunAsNonRoot
}

// userArgs gives buildah run the user the kubelet would run c as (none: the image's USER).
func (c container) userArgs() []string {
	uid, gid := c.runAs()
	if uid == nil {
		return nil
	}
	u := strconv.FormatInt(*uid, 10)
	if gid != nil {
		u += ":" + strconv.FormatInt(*gid, 10)
	}
	return []string{"--user", u}
}

func buildah(args ...string) string {
	GinkgoHelper()
	var stderr bytes.Buffer
	cmd := exec.Command("buildah", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "buildah %s: %s%s", strings.Join(args, " "), out, stderr.String())
	return strings.TrimSpace(string(out))
}

var _ = Describe("the image hack/image.sh builds", Ordered, ContinueOnFailure, func() {
	var (
		containers []container
		ref        string // the tag this run builds, removed at the end
		imageID    string
		config     struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
		ctr     string // a working container of the image
		rootfs  string // ctr's root filesystem, mounted
		archive string // the --oci-archive output
	)

	BeforeAll(func() {
		Expect(os.Geteuid()).To(Equal(0), "the image tier needs root (buildah's system storage)")
		containers = manifestContainers()
		Expect(containers).NotTo(BeEmpty(), "no deploy/ container runs the image")

		// A tag of its own: removing it at the end leaves a developer's localhost/nmoverlay:dev
		// alone (the same tree gives the same image, and rmi of one of its names only untags).
		ref = fmt.Sprintf("localhost/nmoverlay:imagetest-%d", os.Getpid())
		archive = filepath.Join(GinkgoT().TempDir(), "nmoverlay.oci.tar")
		cmd := exec.Command("../../hack/image.sh", "--oci-archive", archive)
		cmd.Env = append(os.Environ(), "IMAGE="+ref)
		cmd.Stderr = GinkgoWriter
		start := time.Now()
		out, err := cmd.Output()
		took := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { buildah("rmi", ref) })
		Expect(string(out)).To(Equal(ref+"\n"), "hack/image.sh prints the image reference, and only that, on stdout")

		var inspect struct {
			FromImageID string
			OCIv1       struct {
				Config json.RawMessage `json:"config"`
			}
		}
		Expect(json.Unmarshal([]byte(buildah("inspect", "--type", "image", ref)), &inspect)).To(Succeed())
		Expect(json.Unmarshal(inspect.OCIv1.Config, &config)).To(Succeed())
		imageID = inspect.FromImageID
		// One line per name of the image: the same tree built as localhost/nmoverlay:dev
		// gives the same image (hack/image.sh builds reproducibly).
		size, _, _ := strings.Cut(buildah("images", "--format", "{{.Size}}", ref), "\n")
		fi, err := os.Stat(archive)
		Expect(err).NotTo(HaveOccurred())
		fmt.Printf("hack/image.sh: %s built in %v (binaries, image and OCI archive): %s, %.1f MB as an OCI archive\n",
			ref, took.Round(100*time.Millisecond), size, float64(fi.Size())/1e6)

		ctr = buildah("from", "--pull=never", "--name", fmt.Sprintf("nmoverlay-imagetest-%d", os.Getpid()), imageID)
		DeferCleanup(func() { buildah("rm", ctr) })
		rootfs = buildah("mount", ctr)
		DeferCleanup(func() { buildah("umount", ctr) })
	})

	It("carries the OCI labels", func() {
		for _, l := range []string{"source", "title", "description"} {
			Expect(config.Labels).To(HaveKeyWithValue("org.opencontainers.image."+l, Not(BeEmpty())))
		}
	})

	It("runs as a numeric non-root user, so that runAsNonRoot can be verified", func() {
		uid, gid, hasGID := strings.Cut(config.User, ":")
		n, err := strconv.ParseUint(uid, 10, 32)
		Expect(err).NotTo(HaveOccurred(), "USER %q: the kubelet cannot check a user name against runAsNonRoot", config.User)
		Expect(n).NotTo(BeZero(), "USER %q is root", config.User)
		if hasGID {
			_, err := strconv.ParseUint(gid, 10, 32)
			Expect(err).NotTo(HaveOccurred(), "USER %q: a group name needs /etc/group, which a scratch image has not", config.User)
		}
		// As the kubelet checks it: the container's or the pod's runAsUser, else the image's.
		for _, c := range containers {
			if !c.runAsNonRoot() {
				continue
			}
			if u, _ := c.runAs(); u != nil {
				Expect(*u).NotTo(BeZero(), c.where)
			}
		}
	})

	It("holds every command the manifests run, executable and statically linked", func() {
		commands := map[string]bool{}
		for _, c := range containers {
			Expect(c.Command).NotTo(BeEmpty(), "%s: no command (the image's entrypoint is the render CLI)", c.where)
			commands[c.Command[0]] = true
		}
		commands[config.Entrypoint[0]] = true
		for cmd := range commands {
			Expect(filepath.IsAbs(cmd)).To(BeTrue(), "%s: scratch has no PATH to search", cmd)
			path := filepath.Join(rootfs, cmd)
			fi, err := os.Lstat(path)
			Expect(err).NotTo(HaveOccurred(), "%s is not in the image", cmd)
			Expect(fi.Mode().IsRegular()).To(BeTrue(), "%s: %v", cmd, fi.Mode())
			// Executable by any user, writable by root alone.
			Expect(fi.Mode().Perm()&0o555).To(Equal(os.FileMode(0o555)), "%s: %v", cmd, fi.Mode())
			Expect(fi.Mode().Perm()&0o022).To(BeZero(), "%s: %v", cmd, fi.Mode())
			Expect(fi.Sys().(*syscall.Stat_t).Uid).To(BeZero(), "%s: owner", cmd)

			f, err := elf.Open(path)
			Expect(err).NotTo(HaveOccurred(), cmd)
			for _, p := range f.Progs {
				Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "%s has a dynamic loader: no libc in a scratch image", cmd)
			}
			libs, err := f.ImportedLibraries()
			Expect(err).NotTo(HaveOccurred(), cmd)
			Expect(libs).To(BeEmpty(), cmd)
			Expect(f.Close()).To(Succeed())
		}
	})

	// One version (hack/version.sh) in the image's label and in every binary of it.
	It("carries one version, in its label and in every command it holds", func() {
		want, err := exec.Command("../../hack/version.sh").Output()
		Expect(err).NotTo(HaveOccurred())
		version := strings.TrimSpace(string(want))
		Expect(config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", version))
		rev, err := exec.Command("../../hack/version.sh", "--revision").Output()
		Expect(err).NotTo(HaveOccurred())
		revision := strings.TrimSpace(string(rev))
		Expect(revision).NotTo(BeEmpty(), "built from a git checkout")
		Expect(config.Labels).To(HaveKeyWithValue("org.opencontainers.image.revision", revision))
		for cmd, arg := range map[string]string{"/nmoverlay": "version", "/nm-overlay": "version", "/handler": "--version",
			"/controller": "--version", "/operator": "--version"} {
			out, err := exec.Command(filepath.Join(rootfs, cmd), arg).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s %s: %s", cmd, arg, out)
			Expect(strings.Fields(string(out))).To(HaveExactElements(filepath.Base(cmd), version, "(commit", revision+")", HavePrefix("go"), runtime.GOOS+"/"+runtime.GOARCH),
				"%s %s: %s", cmd, arg, out)
		}
	})

	// buildah run --isolation chroot works on this kind of machine (root, no user namespaces
	// needed) and runs the binary inside the image, as the user the manifest asks for.
	It("runs each container's command, which prints its usage", func() {
		for _, c := range containers {
			args := append([]string{"run", "--isolation", "chroot"}, c.userArgs()...)
			args = append(args, ctr, c.Command[0], "--help")
			out, err := exec.Command("buildah", args...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s: %s --help: %s", c.where, c.Command[0], out)
			Expect(string(out)).To(ContainSubstring("Usage"), "%s: %s --help", c.where, c.Command[0])
		}
	})

	// An init container runs to completion, so its real command can run here, with its
	// hostPath directories on temporary ones and as its securityContext's user: the handler's
	// installs nm-overlay on the host, which needs root there (runAsUser: 0).
	It("runs the init containers' commands as the manifests give them", func() {
		ran := 0
		for _, c := range containers {
			if !c.init {
				continue
			}
			args := append([]string{"run", "--isolation", "chroot"}, c.userArgs()...)
			host := map[string]string{} // mountPath -> temporary directory
			for _, m := range c.VolumeMounts {
				var hp *corev1.HostPathVolumeSource
				for _, v := range c.pod.Volumes {
					if v.Name == m.Name {
						hp = v.HostPath
					}
				}
				Expect(hp).NotTo(BeNil(), "%s: volume %s: only hostPath directories are provided here", c.where, m.Name)
				Expect(hp.Type).NotTo(BeNil(), "%s: volume %s", c.where, m.Name)
				Expect(*hp.Type).To(BeElementOf(corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate), "%s: volume %s", c.where, m.Name)
				dir := GinkgoT().TempDir()
				host[m.MountPath] = dir
				args = append(args, "-v", dir+":"+m.MountPath)
			}
			args = append(args, ctr)
			args = append(append(args, c.Command...), c.Args...)
			out, err := exec.Command("buildah", args...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s: %s: %s", c.where, strings.Join(c.Command, " "), out)
			ran++

			// nm-overlay install copies itself: the host directory now holds the image's binary.
			if c.Command[0] == "/nm-overlay" {
				i := slices.Index(c.Command, "--to")
				Expect(i).To(BeNumerically(">", 0), "%s: nm-overlay install without --to", c.where)
				to := c.Command[i+1]
				got, err := os.ReadFile(filepath.Join(host[to], "nm-overlay"))
				Expect(err).NotTo(HaveOccurred(), "%s: %s", c.where, out)
				want, err := os.ReadFile(filepath.Join(rootfs, "nm-overlay"))
				Expect(err).NotTo(HaveOccurred())
				Expect(bytes.Equal(got, want)).To(BeTrue(), "%s: the installed binary differs from the image's", c.where)
			}
		}
		Expect(ran).NotTo(BeZero(), "no init container runs the image")
	})

	It("is written to --oci-archive as the same image", func() {
		f, err := os.Open(archive)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		blobs := map[string][]byte{}
		tr := tar.NewReader(f)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			if h.Typeflag != tar.TypeReg || h.Size > 1<<20 { // the layer: not needed
				continue
			}
			b, err := io.ReadAll(tr)
			Expect(err).NotTo(HaveOccurred())
			blobs[h.Name] = b
		}
		Expect(blobs).To(HaveKey("oci-layout"))
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		Expect(json.Unmarshal(blobs["index.json"], &index)).To(Succeed())
		Expect(index.Manifests).To(HaveLen(1))
		var manifest struct {
			Config struct {
				Digest string `json:"digest"`
			} `json:"config"`
		}
		Expect(json.Unmarshal(blobs["blobs/"+strings.Replace(index.Manifests[0].Digest, ":", "/", 1)], &manifest)).To(Succeed())
		Expect(manifest.Config.Digest).To(Equal("sha256:" + imageID))
	})
})
