// Package scheme is the one runtime.Scheme of operator-manager: Kubernetes' built-in kinds,
// CRDs, and operator-manager's own kinds.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
)

// Scheme knows every kind operator-manager reads or writes.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(Scheme))
	utilruntime.Must(omv1.AddToScheme(Scheme))
	utilruntime.Must(omv1alpha1.AddToScheme(Scheme))
	// CRDs and APIServices are served in protobuf, like client-go's built-in kinds, which
	// controller-runtime already reads so; it only needs to be told of these two. CRDs are
	// the largest objects the manager reads (whole schemas), uncached and through the CRD
	// informer, and the API server encodes a watch event once per encoding its watchers
	// use: in JSON, the manager made it encode every CRD change of the cluster once more,
	// as the cluster's own controllers read protobuf. Operator-manager's own kinds are
	// custom resources, which are served in JSON only.
	utilruntime.Must(apiutil.AddToProtobufScheme(apiextensionsv1.AddToScheme))
	utilruntime.Must(apiutil.AddToProtobufScheme(apiregistrationv1.AddToScheme))
}
