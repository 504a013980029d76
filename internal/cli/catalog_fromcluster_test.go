package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestFromClusterDirectory: a Directory CatalogSource is read from this machine's disk
// when the directory is here (the manager of `make run` runs here), with a note naming
// it; else the error names the CatalogSource and its directory and asks for DIR.
func TestFromClusterDirectory(t *testing.T) {
	here := t.TempDir()
	s := runtime.NewScheme()
	_ = omv1.AddToScheme(s)
	for _, tc := range []struct {
		name, dir, wantErr, wantNote string
	}{
		{"on this machine", here, "", "reading " + here + ", the directory of CatalogSource ns/cat, on this machine"},
		{"not on this machine", filepath.Join(here, "gone"), "reads the directory " + filepath.Join(here, "gone") + " on the manager's disk, which is not on this machine: give the catalog as DIR", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &omv1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cat"},
				Spec: omv1.CatalogSourceSpec{SourceType: omv1.SourceDirectory, Directory: tc.dir}}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(cs).Build()
			var stderr bytes.Buffer
			cmd := &cobra.Command{}
			cmd.SetErr(&stderr)
			src := &catalogSource{cmd: cmd}
			err := src.fromCluster(context.Background(), c, client.ObjectKey{Namespace: "ns", Name: "cat"})
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && src.dir != tc.dir:
				t.Errorf("reads %q, want %q", src.dir, tc.dir)
			case tc.wantErr != "" && src.dir != "":
				t.Errorf("reads %q after an error", src.dir)
			}
			if !strings.Contains(stderr.String(), tc.wantNote) || (tc.wantNote == "") != (stderr.Len() == 0) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantNote)
			}
		})
	}
}
