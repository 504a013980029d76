package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"k8s.io/client-go/dynamic"
	"strings"
	"text/tabwriter"

	"github.com/blang/semver/v4"
	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdrepair"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// recommendation is `recommend -o json|yaml`.
type recommendation struct {
	Package     string               `json:"package"`
	Channel     string               `json:"channel"`
	KubeVersion string               `json:"kubeVersion"`
	Installed   string               `json:"installed,omitempty"`
	Recommended string               `json:"recommended,omitempty"`
	Version     string               `json:"version,omitempty"`
	Path        []string             `json:"path,omitempty"`
	Installs    []string             `json:"installs,omitempty"`
	PassedOver  []resolve.PassedOver `json:"passedOver"`
	// Permissions is the RBAC the recommended version would be granted in this
	// namespace, before anything is created.
	Permissions []grant `json:"permissions,omitempty"`
}

func newRecommendCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{}
	var channel, kubeVersion string
	cmd := &cobra.Command{
		Use:   "recommend DIR PACKAGE",
		Short: "The best version of a package to install or upgrade to on this cluster, and why the newer ones are passed over",
		Long: `recommend walks the package's channel from its head down and picks the newest version
that fits this cluster: its minKubeVersion is met, its dependencies resolve against what
the namespace runs, and its CRDs pass the preflight against the live cluster (stored
versions kept, existing custom resources still valid). When the package is installed in
the namespace, only upgrades reachable by the channel's edges count. Every version passed
over is listed with its reason, and the RBAC the recommended version would be granted in
the namespace (its Roles and ClusterRoles, who they are bound to, and where) is listed
before anything is created.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cat, name, rest, err := src.load(ctx, args)
			if err != nil {
				return err
			}
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			kube, err := g.kubeVersion(kubeVersion)
			if err != nil {
				return err
			}
			installed, from, err := installedInNamespace(ctx, c, ns, cat, rest[0])
			if err != nil {
				return err
			}
			rec, err := resolve.Recommend(resolve.RecommendRequest{Package: rest[0], Channel: channel, KubeVersion: kube,
				Catalogs: []resolve.CatalogRef{{Name: name, Catalog: cat}}, Installed: installed, From: from,
				Check: func(b *catalog.Bundle) error { return preflight(ctx, c, dyn, cat, b, cmd.ErrOrStderr()) }})
			if err != nil {
				return err
			}
			doc := recommendation{Package: rest[0], Channel: rec.Channel, KubeVersion: kube.String(), Path: rec.Path, PassedOver: rec.PassedOver}
			if from != nil {
				doc.Installed = from.CSVName
			}
			if rec.Bundle != nil {
				doc.Recommended, doc.Version = rec.Bundle.CSVName, rec.Bundle.Version.String()
				if doc.Permissions, err = bundleGrants(cat, rec.Bundle, ns); err != nil {
					return err
				}
				if rec.Plan != nil {
					for _, s := range rec.Plan.Install {
						doc.Installs = append(doc.Installs, s.CSVName+" ("+s.Reason+")")
					}
				}
			}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) {
				switch {
				case doc.Recommended != "":
					fmt.Fprintf(tw, "Recommended:\t%s (%s) from channel %s, on Kubernetes %s\n", doc.Recommended, doc.Version, doc.Channel, doc.KubeVersion)
				case doc.Installed != "":
					fmt.Fprintf(tw, "Recommended:\tstay on %s: no upgrade fits\n", doc.Installed)
				}
				for _, d := range doc.Installs {
					fmt.Fprintf(tw, "With dependency:\t%s\n", d)
				}
				if len(doc.Permissions) > 0 {
					printGrants(tw, doc.Permissions)
				}
				if len(doc.PassedOver) > 0 {
					fmt.Fprintln(tw, "\nPASSED OVER\tVERSION\tREASON")
					for _, p := range doc.PassedOver {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", p.CSVName, p.Version, p.Reason)
					}
				}
			})
		},
	}
	src.bind(cmd, 2)
	cmd.Flags().StringVar(&channel, "channel", "", "the channel (default: the package's default channel)")
	cmd.Flags().StringVar(&kubeVersion, "kube-version", "", "judge for this Kubernetes version instead of the cluster's")
	out.bind(cmd)
	return cmd
}

// kubeVersion is the override, or the cluster's version from its /version.
func (g *globals) kubeVersion(override string) (semver.Version, error) {
	if override != "" {
		return semver.ParseTolerant(override)
	}
	cfg, err := g.restConfig()
	if err != nil {
		return semver.Version{}, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return semver.Version{}, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return semver.Version{}, fmt.Errorf("reading the cluster's version (or pass --kube-version): %w", err)
	}
	v, err := semver.ParseTolerant(info.GitVersion)
	if err != nil {
		return semver.Version{}, fmt.Errorf("the cluster reports version %q: %w", info.GitVersion, err)
	}
	return semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}, nil
}

// installedInNamespace lists what the namespace's Subscriptions run, and the installed
// version of pkg when there is one.
func installedInNamespace(ctx context.Context, c client.Client, ns string, cat *catalog.Catalog, pkg string) ([]resolve.Installed, *resolve.Installed, error) {
	bps := &omv1.BlueprintList{}
	if err := c.List(ctx, bps, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	var out []resolve.Installed
	var from *resolve.Installed
	for _, bp := range bps.Items {
		v, err := semver.ParseTolerant(bp.Status.CurrentVersion)
		if bp.Status.CurrentCSV == "" || err != nil {
			continue
		}
		in := resolve.Installed{Package: bp.Spec.Package, Version: v, CSVName: bp.Status.CurrentCSV}
		if b := cat.BundleByCSV(bp.Status.CurrentCSV); b != nil {
			for _, o := range b.OwnedCRDs {
				in.Provides = append(in.Provides, o.GVK())
			}
		}
		out = append(out, in)
		if in.Package == pkg {
			from = &out[len(out)-1]
		}
	}
	return out, from, nil
}

// preflight runs the CRD preflight of a bundle against the live cluster. The storage
// version migrations a bundle that passes would need are written to notes.
func preflight(ctx context.Context, c client.Client, dyn dynamic.Interface, cat *catalog.Catalog, b *catalog.Bundle, notes io.Writer) error {
	content, err := cat.Content(b)
	if errors.Is(err, catalog.ErrNoContent) {
		return nil // an image-only bundle: nothing to check here
	} else if err != nil {
		return err
	}
	var migrations []string
	for _, u := range content.CRDs {
		crd, _, err := crdrepair.Repair(u)
		if err != nil {
			return fmt.Errorf("its CRD %s cannot be installed: %v", u.GetName(), err)
		}
		_, m, v, err := crdsafety.Preflight(ctx, c, dyn, crd, b.Package)
		if err != nil {
			return err
		} else if v != nil {
			return fmt.Errorf("the CRD preflight refuses it: %v", v)
		}
		if m != nil { // only reported: recommend changes nothing
			migrations = append(migrations, fmt.Sprintf("%s: CRD %s drops %s, listed in its status.storedVersions: installing it first rewrites every custom resource in storage version %s and removes %s from status.storedVersions\n",
				b.CSVName, m.CRD, strings.Join(m.Drop, ", "), m.StorageVersion, strings.Join(m.Drop, ", ")))
		}
	}
	for _, note := range migrations {
		fmt.Fprint(notes, note)
	}
	return nil
}
