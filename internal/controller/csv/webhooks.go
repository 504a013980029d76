package csv

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/identity"
	"github.com/operator-manager/operator-manager/internal/render"
	"github.com/operator-manager/operator-manager/internal/servingcert"
)

// ConversionFieldOwner is the field manager of the spec.conversion the manager sets on a
// CRD whose operator serves its conversion webhook: apart from the CRD's own apply (by
// the Blueprint, from the bundle), so neither takes the other's fields.
const ConversionFieldOwner = config.FieldOwner + "-conversion"

// webhookCerts returns the serving certificate of each Deployment of the CSV that serves a
// webhook: the one in its Secret while it is valid for the Service's DNS names and not
// near its end, a new one (with a new CA) otherwise. Reusing it keeps the rendering, and
// so the pods, unchanged; a new one changes the pod template's hash annotation, which
// rolls the pods onto it.
func (r *Reconciler) webhookCerts(ctx context.Context, s *scope) (map[string]render.ServingCert, error) {
	deps := render.ServingDeployments(&s.csv.Spec.ClusterServiceVersionSpec)
	if len(deps) == 0 {
		return nil, nil
	}
	out := make(map[string]render.ServingCert, len(deps))
	for _, dep := range deps {
		secret := &corev1.Secret{}
		var existing servingcert.Bundle
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.csv.Namespace, Name: render.WebhookSecretName(dep)}, secret)
		switch {
		case err == nil:
			existing = servingcert.FromSecretData(secret.Data)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading the serving certificate of Deployment %s: %w", dep, err)
		}
		names := servingcert.DNSNames(render.WebhookServiceName(dep), s.csv.Namespace)
		b, rotated, reason, err := servingcert.Ensure(existing, names, s.now)
		if err != nil {
			return nil, fmt.Errorf("issuing the serving certificate of Deployment %s: %w", dep, err)
		}
		if rotated && len(existing.Cert) > 0 {
			r.event(s.csv, false, "CertificateRotated", "Issued a new serving certificate for %s (%s): %s", dep, names[0], reason)
		}
		out[dep] = render.ServingCert{CA: b.CA, Cert: b.Cert, Key: b.Key, Hash: b.Hash()}
		if at := servingcert.RenewAt(b); s.renewCerts.IsZero() || at.Before(s.renewCerts) {
			s.renewCerts = at
		}
	}
	return out, nil
}

// conversions sets spec.conversion on the CRDs whose conversion webhook the CSV's
// operator serves, with the Service and the CA of its serving certificate, when the live
// CRD says otherwise (after the CSV's objects are applied, so the Service exists) and
// this installation holds the CRD's conversion among those serving it (conversionHolder).
func (r *Reconciler) conversions(ctx context.Context, s *scope) (bool, error) {
	if len(s.conversions) == 0 {
		return false, nil
	}
	cl, err := r.Identities.For(s.id)
	if err != nil {
		return true, err
	}
	for _, c := range s.conversions {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: c.CRD}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				return r.refused(s, fmt.Errorf("spec.webhookdefinitions names CRD %s for conversion, which is not installed", c.CRD))
			}
			return true, err
		}
		if conversionIs(crd.Spec.Conversion, c) {
			continue
		}
		peers, err := r.conversionPeers(ctx, s.csv, c.CRD)
		if err != nil {
			return true, err
		}
		holder, _ := conversionHolder(peers, render.ConversionService(crd.Spec.Conversion))
		if holder.Namespace != s.csv.Namespace || holder.Name != s.csv.Name {
			continue // another installation's operator converts it; see conversionholder.go
		}
		err = applyConversion(ctx, cl, crd, map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": toAny(c.ReviewVersions),
				"clientConfig": map[string]any{
					// caBundle is []byte in the typed API: base64 in JSON.
					"caBundle": base64.StdEncoding.EncodeToString(c.CABundle),
					"service":  map[string]any{"namespace": c.Namespace, "name": c.Name, "path": c.Path, "port": int64(c.Port)},
				},
			},
		})
		if err != nil {
			return r.refused(s, fmt.Errorf("setting the conversion webhook of CRD %s: %w", c.CRD, err))
		}
		shared := ""
		if len(peers) > 1 {
			shared = fmt.Sprintf(" (held among the %d installations serving it: one past its health gate first, then the newest version)", len(peers))
		}
		r.event(s.csv, false, "ConversionWebhookSet", "CRD %s converts through Service %s/%s%s%s", c.CRD, c.Namespace, c.Name, c.Path, shared)
	}
	return false, nil
}

// conversionIs reports whether a CRD's conversion already is the wanted webhook.
func conversionIs(conv *apiextensionsv1.CustomResourceConversion, c render.CRDConversion) bool {
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return false
	}
	cc := conv.Webhook.ClientConfig
	if cc.Service == nil || cc.Service.Namespace != c.Namespace || cc.Service.Name != c.Name || !bytes.Equal(cc.CABundle, c.CABundle) {
		return false
	}
	if p := cc.Service.Path; p == nil || *p != c.Path {
		return false
	}
	if p := cc.Service.Port; p == nil || *p != c.Port {
		return false
	}
	return len(conv.Webhook.ConversionReviewVersions) == len(c.ReviewVersions)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// releaseConversions sets the conversion strategy of the CRDs whose conversion webhook
// the CSV's operator served back to None once the Service it named is gone: CRDs and
// their custom resources outlive the operator, and a webhook pointing at nothing would
// make every read in another version fail. A newer version of the installation keeps the
// same Service, so its CRDs are left as they are.
func (r *Reconciler) releaseConversions(ctx context.Context, csv *omv1alpha1.ClusterServiceVersion, id identity.Identity) error {
	if csv.Spec.DecodeError != "" {
		return nil
	}
	var cl client.Client
	for _, def := range csv.Spec.WebhookDefinitions {
		if def.Type != olm.ConversionWebhook {
			continue
		}
		service := render.WebhookServiceName(def.DeploymentName)
		for _, name := range def.ConversionCRDs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, crd); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return err
			}
			if render.ConversionService(crd.Spec.Conversion) != csv.Namespace+"/"+service {
				continue // another installation's, or no webhook
			}
			err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: service}, &corev1.Service{})
			if err == nil {
				continue // still served: a newer version took the Service over
			} else if !apierrors.IsNotFound(err) {
				return err
			}
			if cl == nil {
				if cl, err = r.Identities.For(id); err != nil {
					return err
				}
			}
			if err := applyConversion(ctx, cl, crd, map[string]any{"strategy": "None"}); err != nil {
				return fmt.Errorf("setting the conversion of CRD %s back to None: %w", name, err)
			}
			r.event(csv, false, "ConversionWebhookReleased", "CRD %s no longer converts through Service %s/%s, which is gone", name, csv.Namespace, service)
		}
	}
	return nil
}

// applyConversion server-side applies spec.conversion of a CRD, alone, under
// ConversionFieldOwner: fields of it the owner no longer states are removed.
// It holds to crd's resourceVersion, that of the read the decision was made from: two
// installations passing their health gates at the same moment each decide from their own
// read which of them holds the conversion (conversionHolder), and the later write, from a
// read the earlier one changed, is refused as a Conflict and decided again from a fresh
// read (before, it was applied anyway, and the holder converged only on the next look).
func applyConversion(ctx context.Context, cl client.Client, crd *apiextensionsv1.CustomResourceDefinition, conversion map[string]any) error {
	metadata := map[string]any{"name": crd.Name}
	if crd.ResourceVersion != "" { // an empty one is refused, not ignored
		metadata["resourceVersion"] = crd.ResourceVersion
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": metadata,
		"spec":     map[string]any{"conversion": conversion},
	}}
	return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(ConversionFieldOwner), client.ForceOwnership)
}
