//go:build integration

package integration_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// The objects earlier releases wrote (deploy/testdata/released/VERSION/objects.yaml,
// recorded by the upgrade tier from the release's own pods: NMOVERLAY_UPGRADE_RECORD)
// written again through this tree's CRDs on a real API server: a CRD change that would
// reject one, or prune a field of it, fails here. An API server of its own: the NMState's
// name is the cluster's one.
var _ = Describe("objects stored by earlier releases", func() {
	It("are accepted by this tree's CRDs and read back as they were written, nothing pruned", func() {
		ctx := context.Background()
		files, err := filepath.Glob("../../deploy/testdata/released/*/objects.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty(), "no release's objects in deploy/testdata/released")
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		kinds := map[string]int{}
		for _, file := range files {
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			objs, err := deploy.Decode(b)
			Expect(err).NotTo(HaveOccurred())
			for _, want := range objs {
				where := file + ": " + want.GetKind() + " " + want.GetName()
				o := want.DeepCopy()
				Expect(a.Client.Create(ctx, o)).To(Succeed(), where)
				if status, ok := want.Object["status"]; ok {
					// Where status is a subresource, create dropped it: written as the
					// handler and the controller write it.
					o.Object["status"] = status
					if err := a.Client.Status().Update(ctx, o); apierrors.IsNotFound(err) {
						Expect(a.Client.Update(ctx, o)).To(Succeed(), where)
					} else {
						Expect(err).NotTo(HaveOccurred(), where)
					}
				}
				got := want.DeepCopy()
				Expect(a.Client.Get(ctx, client.ObjectKeyFromObject(want), got)).To(Succeed(), where)
				for _, part := range []string{"spec", "status"} {
					if w, ok := want.Object[part]; ok {
						Expect(got.Object[part]).To(Equal(w), "%s: %s as written", where, part)
					}
				}
				Expect(got.GetLabels()).To(Equal(want.GetLabels()), where)
				Expect(got.GetAnnotations()).To(Equal(want.GetAnnotations()), where)
				kinds[want.GetKind()]++
			}
		}
		Expect(kinds).To(HaveKey("NMState"))
		Expect(kinds).To(HaveKey("NodeNetworkConfigurationPolicy"))
		Expect(kinds).To(HaveKey("NodeNetworkConfigurationEnactment"))
		Expect(kinds).To(HaveKey("NodeNetworkState"))
	})
})
