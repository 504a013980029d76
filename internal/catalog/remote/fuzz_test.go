package remote

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

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

// FuzzIndex: an index comes from the network; whatever it holds, building a catalog from
// it fails with an error or gives one whose lookups work, never a panic.
func FuzzIndex(f *testing.F) {
	dir, err := catalog.Load("../testdata/layouts", catalog.Options{})
	if err != nil {
		f.Fatal(err)
	}
	seed, err := json.Marshal(Index{Digest: dir.Digest, Packages: dir.Packages(), Bundles: dir.Bundles()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"digest":"sha256:` + strings.Repeat("0", 64) + `","packages":[{"name":"p","channels":[{"name":"c","head":"x","entries":[{"name":"x"}]}]}],"bundles":[null]}`))
	client := &Client{BaseURL: "http://127.0.0.1:1"} // files are never read here
	f.Fuzz(func(t *testing.T, data []byte) {
		var idx Index
		if json.Unmarshal(data, &idx) != nil {
			return
		}
		cat, err := client.Catalog(&idx)
		if err != nil {
			return
		}
		for _, p := range cat.Packages() {
			_, _ = cat.Head(p.Name, "")
			for _, c := range p.Channels {
				_ = c.Edges()
				_, _ = cat.Successors(p.Name, c.Name, semver.Version{})
			}
		}
	})
}
