package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/bundlecache"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/catalog/remote"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"
)

// The local bundle cache (run --cache-dir) holds two kinds of entry, both by digest:
// bundles the manager installed or rolled back to (<digest>.json, bundlecache) and
// bundles fetched from HTTP catalogs (remote/<digest>.tar). Both are accelerators: every
// retained revision is also stored in the cluster, so removing an entry loses nothing;
// the next install of that version reads the cluster or the catalog again.

// cacheRow is one entry of `cache list` and `cache prune`.
type cacheRow struct {
	Digest  string    `json:"digest"`
	Source  string    `json:"source"` // installed, or fetched (from an HTTP catalog)
	CSV     string    `json:"csv,omitempty"`
	Version string    `json:"version,omitempty"`
	Size    int64     `json:"size"`
	Cached  time.Time `json:"cachedAt"`
	// UsedBy are the installations (namespace/name) with a retained revision of this
	// bundle; nil when the cluster was not asked.
	UsedBy []string `json:"usedBy,omitempty"`
	Path   string   `json:"path"`
	// Error says why the entry could not be read (a damaged entry, which prune removes).
	Error string `json:"error,omitempty"`
}

func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List and prune the local bundle cache (run --cache-dir)",
		Long: `The manager keeps every bundle it installs, and every bundle it fetches from an HTTP
catalog, in a local cache by content digest, so that reinstalls and rollbacks need no
catalog. Every retained revision is also stored in the cluster, so pruning the cache
loses nothing: a version needed again is read from the cluster or the catalog.`,
	}
	cmd.AddCommand(newCacheListCmd(g), newCachePruneCmd(g))
	return cmd
}

// cacheFlags are the flags both cache verbs share.
type cacheFlags struct {
	dir     string
	offline bool
}

func (f *cacheFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "cache-dir", defaultCacheDir(), "the cache `DIR`, as given to 'run --cache-dir' ('dev up' uses the dev directory's bundles/)")
	cmd.Flags().BoolVar(&f.offline, "offline", false, "do not ask the cluster which installations use each bundle")
}

// rows reads the cache's entries, with the installations using each unless offline.
func (f *cacheFlags) rows(ctx context.Context, g *globals) ([]cacheRow, error) {
	installed, err := bundlecache.ListDir(f.dir, ".json")
	if err != nil {
		return nil, err
	}
	fetched, err := bundlecache.ListDir(filepath.Join(f.dir, catalogsource.RemoteCacheSubdir), ".tar")
	if err != nil {
		return nil, err
	}
	cache := &bundlecache.Cache{Dir: f.dir}
	client := &remote.Client{CacheDir: filepath.Join(f.dir, catalogsource.RemoteCacheSubdir)}
	var rows []cacheRow
	add := func(e bundlecache.Entry, source string, read func(string) ([]catalog.File, error)) {
		row := cacheRow{Digest: e.Digest, Source: source, Size: e.Size, Cached: e.ModTime, Path: e.Path}
		files, err := read(e.Digest)
		if err == nil {
			var content *catalog.BundleContent
			if content, err = catalog.ContentFromFiles(files); err == nil {
				row.CSV, row.Version = content.CSV.Name, content.CSV.Spec.Version.String()
			}
		}
		if err != nil {
			row.Error = err.Error()
		}
		rows = append(rows, row)
	}
	for _, e := range installed {
		add(e, "installed", cache.Get)
	}
	for _, e := range fetched {
		add(e, "fetched", client.CachedFiles)
	}
	if f.offline {
		return rows, nil
	}
	users, err := bundleUsers(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("asking the cluster which installations use the cached bundles (--offline does not): %w", err)
	}
	for i := range rows {
		rows[i].UsedBy = append([]string{}, users[rows[i].Digest]...)
	}
	return rows, nil
}

// bundleUsers maps each bundle digest to the installations with a retained revision of it.
func bundleUsers(ctx context.Context, g *globals) (map[string][]string, error) {
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list := &omv1.BlueprintList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, bp := range list.Items {
		seen := map[string]bool{}
		for _, h := range bp.Status.History {
			if h.BundleDigest != "" && !seen[h.BundleDigest] {
				seen[h.BundleDigest] = true
				users[h.BundleDigest] = append(users[h.BundleDigest], bp.Namespace+"/"+bp.Name)
			}
		}
	}
	return users, nil
}

func printCacheRows(tw *tabwriter.Writer, rows []cacheRow, asked bool) {
	fmt.Fprintln(tw, "DIGEST\tSOURCE\tCSV\tVERSION\tSIZE\tCACHED\tUSED BY")
	for _, r := range rows {
		csv := r.CSV
		if r.Error != "" {
			csv = "(unreadable: " + r.Error + ")"
		}
		usedBy := "?"
		if asked {
			usedBy = "-"
			if len(r.UsedBy) > 0 {
				usedBy = r.UsedBy[0]
				if len(r.UsedBy) > 1 {
					usedBy += fmt.Sprintf(" +%d", len(r.UsedBy)-1)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", catalog.ShortDigest(r.Digest), r.Source, csv, r.Version, humanBytes(r.Size),
			duration.HumanDuration(time.Since(r.Cached))+" ago", usedBy)
	}
}

func newCacheListCmd(g *globals) *cobra.Command {
	out, f := &output{}, &cacheFlags{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cached bundles: digest, CSV, version, size, age, and the installations using each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := f.rows(cmd.Context(), g)
			if err != nil {
				return err
			}
			if rows == nil {
				rows = []cacheRow{}
			}
			return out.print(cmd.OutOrStdout(), rows, func(tw *tabwriter.Writer) { printCacheRows(tw, rows, !f.offline) })
		},
	}
	f.bind(cmd)
	out.bind(cmd)
	return cmd
}

func newCachePruneCmd(g *globals) *cobra.Command {
	out, f := &output{}, &cacheFlags{}
	var olderThan time.Duration
	var all, dryRun bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove cached bundles no installation in the cluster uses (--all: every one)",
		Long: `prune removes from the local cache the bundles that no retained revision of any
installation in the cluster uses, and damaged entries; with --older-than only those
cached longer ago than that; with --all every entry (retained revisions stay stored in the
cluster). --dry-run only says what it would remove.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				f.offline = true // in use or not, everything goes: no need to ask
			} else if f.offline {
				return usageError("--offline cannot tell which bundles are in use: give --all to remove every entry")
			}
			rows, err := f.rows(cmd.Context(), g)
			if err != nil {
				return err
			}
			removed := []cacheRow{}
			for _, r := range rows {
				if len(r.UsedBy) > 0 || (olderThan > 0 && time.Since(r.Cached) < olderThan && r.Error == "") {
					continue
				}
				if !dryRun {
					if err := os.Remove(r.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("removing %s: %w", r.Path, err)
					}
				}
				removed = append(removed, r)
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			var freed int64
			for _, r := range removed {
				freed += r.Size
			}
			return out.print(cmd.OutOrStdout(), map[string]any{"dryRun": dryRun, "removed": removed, "freedBytes": freed}, func(tw *tabwriter.Writer) {
				if len(removed) > 0 {
					printCacheRows(tw, removed, !f.offline)
					_ = tw.Flush()
				}
				fmt.Fprintf(tw, "%s %d of %d cached bundle(s), %s\n", verb, len(removed), len(rows), humanBytes(freed))
			})
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "only remove entries cached longer ago than this (for example 720h)")
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry, used or not")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only print what would be removed")
	f.bind(cmd)
	out.bind(cmd)
	return cmd
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
