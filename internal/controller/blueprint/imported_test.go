package blueprint

import (
	"strings"
	"testing"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
)

// TestImportedHistory: the revisions `import` wrote are read as history that ran
// elsewhere (oldest first, Imported, Succeeded, no generation of this Blueprint's), and a
// list a hand broke is refused whole, naming what is wrong.
func TestImportedHistory(t *testing.T) {
	got, err := ImportedHistory(`[{"revision":4,"csvName":"a.v2","version":"2.0.0","bundleDigest":"sha256:b","trigger":"Rollback","generation":3,"outcome":"Failed"},
		{"revision":1,"csvName":"a.v1","version":"1.0.0","bundleDigest":"sha256:a","trigger":"Install","installPlan":"install-x"}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Revision != 1 || got[1].Revision != 4 {
		t.Fatalf("got %+v, want revisions 1 then 4", got)
	}
	for _, r := range got {
		if !r.Imported || r.Generation != 0 || r.Outcome != omv1.OutcomeSucceeded || r.Reason == "" || r.InstallPlan != "" {
			t.Errorf("revision %d: %+v, want Imported, Succeeded, generation 0, no InstallPlan", r.Revision, r)
		}
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"revision":1}`, "cannot unmarshal"},
		{`[{"revision":0,"csvName":"a.v1","bundleDigest":"sha256:a"}]`, "revision 0 is not a positive number"},
		{`[{"revision":1,"csvName":"a.v1","bundleDigest":"sha256:a"},{"revision":1,"csvName":"a.v2","bundleDigest":"sha256:b"}]`, "revision 1 appears twice"},
		{`[{"revision":2,"csvName":"a.v1"}]`, "revision 2: csvName and bundleDigest are required"},
	} {
		_, err := ImportedHistory(tc.raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), omv1.AnnotationImportedHistory) {
			t.Errorf("ImportedHistory(%s) = %v, want an error naming the annotation and %q", tc.raw, err, tc.want)
		}
	}
}
