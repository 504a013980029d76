package catalog

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/operator-manager/operator-manager/internal/catalog/catalogtest"
)

// The catalog target (DESIGN.md) is a ratio measured in one run: loading and indexing the
// community catalog costs at most 1.5x the floor, the work no loader can skip
// (BenchmarkParseFloorCommunity). BenchmarkDecodeFloorCommunity, a decode of every document
// into maps, is kept for reference: the loader does less than that by design, so a ratio
// against it says little.
// Run: go test -run=^$ -bench=Community -benchmem -count=3 ./internal/catalog/

func BenchmarkLoadCommunity(b *testing.B) {
	dir := catalogtest.CommunityPath(b)
	b.ReportAllocs()
	var peak peakHeap
	var retained uint64
	for b.Loop() {
		peak.start()
		c, err := Load(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		peak.stop()
		// What the index keeps: heap in use after a collection, the catalog alive.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		retained = max(retained, ms.HeapInuse-min(ms.HeapInuse, peak.base))
		runtime.KeepAlive(c)
	}
	peak.report(b)
	b.ReportMetric(float64(retained)/(1<<20), "retained-heap-MiB")
}

// manifestFiles are the YAML files of the catalog the loader reads.
func manifestFiles(b *testing.B, dir string) []string {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isManifestFile(p) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// BenchmarkParseFloorCommunity is the floor: what any loader must do and no more. Read
// every YAML file the loader would read, hash it (the loader digests every bundle) and
// parse each document with the loader's own YAML parser (go.yaml.in/yaml/v2) into
// nothing: the parser builds its node tree, no map or struct field is filled.
func BenchmarkParseFloorCommunity(b *testing.B) {
	benchFloor(b, func(data []byte) {
		_ = sha256.Sum256(data)
		for _, doc := range splitDocuments(data) {
			var nothing struct{}
			_ = yamlv2.Unmarshal(doc.data, &nothing) // a document the loader rejects costs the same
		}
	})
}

// BenchmarkDecodeFloorCommunity, for reference: read every YAML file the loader would
// read and decode each document into map[string]any with sigs.k8s.io/yaml (YAML to JSON
// to maps).
func BenchmarkDecodeFloorCommunity(b *testing.B) {
	benchFloor(b, func(data []byte) {
		for _, doc := range splitDocuments(data) {
			var m map[string]any
			_ = yaml.Unmarshal(doc.data, &m)
		}
	})
}

// benchFloor reads every YAML file of the community catalog the loader would read and
// hands its bytes to perFile, on the same number of workers as Load, keeping nothing, and
// reports the peak heap as Load's benchmark does.
func benchFloor(b *testing.B, perFile func(data []byte)) {
	files := manifestFiles(b, catalogtest.CommunityPath(b))
	b.ReportAllocs()
	var peak peakHeap
	for b.Loop() {
		peak.start()
		parallel(len(files), runtime.GOMAXPROCS(0), func(i int) {
			data, err := os.ReadFile(files[i])
			if err != nil {
				b.Error(err)
				return
			}
			perFile(data)
		})
		peak.stop()
	}
	peak.report(b)
}

func BenchmarkReloadUnchangedCommunity(b *testing.B) {
	dir := catalogtest.CommunityPath(b)
	c, err := Load(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, changed, err := LoadIfChanged(dir, c, Options{})
		if err != nil || changed || got != c {
			b.Fatalf("reload: changed=%v err=%v", changed, err)
		}
	}
}

// peakHeap samples HeapInuse while an operation runs and reports the largest value seen,
// minus what was in use before, as peak-heap-MiB.
type peakHeap struct {
	base, peak uint64
	done       chan struct{}
	finished   chan struct{}
	max        uint64
}

func (p *peakHeap) start() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.base, p.peak = ms.HeapInuse, ms.HeapInuse
	p.done, p.finished = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.finished)
		var ms runtime.MemStats
		for {
			select {
			case <-p.done:
				return
			default:
			}
			runtime.ReadMemStats(&ms)
			p.peak = max(p.peak, ms.HeapInuse)
			sleepBriefly()
		}
	}()
}

func (p *peakHeap) stop() {
	close(p.done)
	<-p.finished
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.peak = max(p.peak, ms.HeapInuse)
	p.max = max(p.max, p.peak-p.base)
}

func (p *peakHeap) report(b *testing.B) {
	b.ReportMetric(float64(p.max)/(1<<20), "peak-heap-MiB")
}

func sleepBriefly() { time.Sleep(5 * time.Millisecond) }
