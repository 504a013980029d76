package resolve

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-manager/operator-manager/internal/catalog"
)

// RecommendRequest asks for the best version of a package for this cluster.
type RecommendRequest struct {
	Package string
	// Channel is walked; empty means the package's default channel.
	Channel string
	// Catalogs: the package is taken from Catalogs[0]; dependencies are resolved over all
	// of them, as in Request.
	Catalogs    []CatalogRef
	Installed   []Installed
	KubeVersion semver.Version
	// From is the installed version being upgraded, nil for a fresh install. Only
	// versions newer than it and reachable from it by the channel's upgrade edges
	// (transitively) in Catalogs[0] are candidates.
	From *Installed
	// Check is an extra verdict on a candidate, such as the CRD safety preflight against
	// the cluster's custom resources; nil accepts every bundle. It runs last, since it is
	// the costliest.
	Check func(*catalog.Bundle) error
}

// PassedOver is a version newer than the recommendation and why it was not taken.
type PassedOver struct {
	CSVName string
	Version semver.Version
	// Reason is a verb phrase following the CSV name: "needs Kubernetes 1.30.0 or
	// newer, ...", "is not reachable from installed ...".
	Reason string
}

// Recommendation is the answer of Recommend.
type Recommendation struct {
	// Bundle is the version to install or upgrade to; nil when upgrading and no newer
	// version passes, so the installed version stays.
	Bundle  *catalog.Bundle
	Catalog string
	Channel string
	// Plan resolves Bundle's dependencies.
	Plan *Plan
	// Path lists the CSVs of a shortest upgrade path from From to Bundle (Bundle
	// included, From not): the versions OLM would step through.
	Path []string
	// PassedOver lists the newer versions refused, newest first.
	PassedOver []PassedOver
}

// maxReasonInMessage bounds each passed-over reason repeated in an error message; the
// full reasons stay in the error's caller-visible PassedOver only when there is an answer.
const maxReasonInMessage = 400

// Recommend walks a channel from its head downwards and returns the first version that
// can be installed here: its minKubeVersion passes, its dependencies resolve, and Check
// accepts it. When upgrading, versions not reachable from the installed one are passed
// over. A fresh install with no acceptable version fails with an *Error
// (ReasonUnsatisfiable) listing each version and why.
func Recommend(req RecommendRequest) (*Recommendation, error) {
	if len(req.Catalogs) == 0 || req.Catalogs[0].Catalog == nil {
		return nil, fmt.Errorf("recommending a version of %q: no catalog", req.Package)
	}
	cr := req.Catalogs[0]
	p := cr.Catalog.Package(req.Package)
	if p == nil {
		return nil, packageNotFound(cr.Catalog, cr.Name, req.Package)
	}
	channel := req.Channel
	if channel == "" {
		channel = p.DefaultChannel
	}
	ch := p.Channel(channel)
	if ch == nil {
		return nil, &Error{ReasonChannelNotFound, fmt.Sprintf("package %q in catalog %s has no channel %q; its channels: %s",
			p.Name, cr.Name, channel, channelList(p))}
	}
	var from map[string]string
	if req.From != nil {
		from = upgrades(cr.Catalog, p.Name, channel, req.From.CSVName, req.From.Version)
	}
	rec := &Recommendation{Catalog: cr.Name, Channel: channel}
	kube := normalKube(req.KubeVersion)
	for _, b := range walk(ch) {
		pass := func(why string) { rec.PassedOver = append(rec.PassedOver, PassedOver{b.CSVName, b.Version, why}) }
		if req.From != nil {
			if !b.Version.GT(req.From.Version) {
				continue // not an upgrade
			}
			if _, ok := from[b.CSVName]; !ok {
				pass(fmt.Sprintf("is not reachable from installed %s by the upgrade edges of channel %s", req.From.CSVName, channel))
				continue
			}
		}
		if why := kubeRefusal(kube, b); why != "" {
			pass(why)
			continue
		}
		plan, err := Resolve(Request{Root: b, Catalogs: req.Catalogs, Installed: req.Installed, KubeVersion: req.KubeVersion})
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				return nil, err
			}
			pass("has dependencies that cannot be met: " + strings.TrimPrefix(re.Message, "cannot install "+b.CSVName+": "))
			continue
		}
		if req.Check != nil {
			if err := req.Check(b); err != nil {
				pass("fails the check: " + err.Error())
				continue
			}
		}
		rec.Bundle, rec.Plan, rec.Path = b, plan, pathTo(from, req.From, b)
		return rec, nil
	}
	if req.From != nil {
		return rec, nil
	}
	return nil, &Error{ReasonUnsatisfiable, noVersionMessage(p.Name, channel, cr.Name, rec.PassedOver)}
}

// walk returns a channel's bundles from the head down: the head, then the other entries
// newest first.
func walk(ch *catalog.Channel) []*catalog.Bundle {
	out := make([]*catalog.Bundle, 0, len(ch.Entries))
	if e, ok := ch.Entry(ch.Head); ok && e.Bundle != nil {
		out = append(out, e.Bundle)
	}
	for _, e := range ch.Entries {
		if e.Bundle != nil && e.Name != ch.Head {
			out = append(out, e.Bundle)
		}
	}
	return out
}

// pathTo follows the upgrade walk's parents back from b to the installed version.
func pathTo(from map[string]string, in *Installed, b *catalog.Bundle) []string {
	if in == nil {
		return nil
	}
	var path []string
	for csv := b.CSVName; csv != in.CSVName && len(path) <= len(from); csv = from[csv] {
		path = append(path, csv)
	}
	slices.Reverse(path)
	return path
}

func noVersionMessage(pkg, channel, catName string, passed []PassedOver) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no version of package %q in channel %q of catalog %s can be installed on this cluster", pkg, channel, catName)
	for i, p := range passed {
		if i == maxClauses {
			fmt.Fprintf(&b, "; and %d more", len(passed)-maxClauses)
			break
		}
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		reason := p.Reason
		if len(reason) > maxReasonInMessage {
			cut := strings.LastIndexByte(reason[:maxReasonInMessage], ' ')
			reason = reason[:max(cut, 0)] + " ..."
		}
		b.WriteString(sep + p.CSVName + " " + reason)
	}
	return b.String()
}

// normalKube keeps major.minor.patch of the cluster's version: vendor builds carry
// pre-release tags ("1.29.3-eks-1234") that semver would order below the release they are.
func normalKube(v semver.Version) semver.Version {
	return semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
}

// kubeRefusal says why b cannot run on Kubernetes kube (zero: unknown, no check), or "".
func kubeRefusal(kube semver.Version, b *catalog.Bundle) string {
	if kube.Equals(semver.Version{}) || b.MinKubeVersion == "" {
		return ""
	}
	min, err := semver.ParseTolerant(b.MinKubeVersion)
	if err != nil {
		return fmt.Sprintf("has an unreadable minKubeVersion %q", b.MinKubeVersion)
	}
	if min.GT(kube) {
		return fmt.Sprintf("needs Kubernetes %s or newer, the cluster runs %s", min, kube)
	}
	return ""
}
