package remote

import (
	"bytes"
	"testing"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// FuzzReadArchive: archives come from the network and the cache; a hostile one is refused
// with an error, never a panic, and never yields an unclean name.
func FuzzReadArchive(f *testing.F) {
	var buf bytes.Buffer
	if err := writeArchive(&buf, []catalog.File{{Name: "manifests/csv.yaml", Data: []byte("kind: ClusterServiceVersion\n")}, {Name: "metadata/annotations.yaml", Data: []byte("annotations: {}\n")}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := readArchive(data)
		if err != nil {
			return
		}
		for _, file := range files {
			if !cleanRelative(file.Name) {
				t.Fatalf("unclean name %q accepted", file.Name)
			}
		}
	})
}
