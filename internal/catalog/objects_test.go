package catalog

import (
	"reflect"
	"testing"
)

// TestObjectsFromFilesAgreesWithContent: what an installed CSV reads of its bundle at each
// reconcile (ObjectsFromFiles, which skips the CSV and CRDs unparsed) is exactly the
// other manifests a full parse finds, for every bundle of the sample catalog.
func TestObjectsFromFilesAgreesWithContent(t *testing.T) {
	cat, err := Load("../../samples/catalog", Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range cat.Packages() {
		for _, b := range p.Bundles {
			files, err := cat.Files(b)
			if err != nil {
				t.Fatal(err)
			}
			full, err := ContentFromFiles(files)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := ObjectsFromFiles(files)
			if err != nil {
				t.Fatalf("%s: %v", b.Ref(), err)
			}
			if len(objs) != len(full.Objects) || (len(objs) > 0 && !reflect.DeepEqual(objs, full.Objects)) {
				t.Errorf("%s: ObjectsFromFiles = %d objects, a full parse %d", b.Ref(), len(objs), len(full.Objects))
			}
			n += len(objs)
		}
	}
	if n == 0 {
		t.Fatal("no sample bundle has other manifests: the test compares nothing")
	}
}
