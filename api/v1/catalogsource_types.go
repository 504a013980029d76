package v1

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SourceType is where a catalog's bundles are read from.
// +kubebuilder:validation:Enum=Directory;HTTP;Image;grpc;configmap;internal
type SourceType string

const (
	// SourceDirectory reads a catalog directory on the manager's filesystem (mounted or
	// baked into the image).
	SourceDirectory SourceType = "Directory"
	// SourceHTTP reads a catalog served by `operator-manager catalog serve`.
	SourceHTTP SourceType = "HTTP"
	// SourceImage pulls a catalog image: a File-Based Catalog in an OCI image, as
	// OperatorHub and OLM publish them; its bundles are pulled from their bundle images.
	SourceImage SourceType = "Image"
	// SourceGRPC is OLM's sourceType for a catalog image (spec.image) or a registry
	// server (spec.address). OLM runs the image as a registry pod and asks it over gRPC;
	// operator-manager reads the image itself, so grpc with an image is Image. With only
	// an address it asks the registry server there, over operator-registry's gRPC API.
	SourceGRPC SourceType = "grpc"
	// SourceConfigMap is OLM's ConfigMap catalog: spec.configMap names a ConfigMap in the
	// CatalogSource's namespace whose customResourceDefinitions, clusterServiceVersions
	// and packages keys hold YAML lists (deprecated in OLM, still found in older setups).
	SourceConfigMap SourceType = "configmap"
	// SourceInternal is OLM's older name for SourceConfigMap.
	SourceInternal SourceType = "internal"
)

// RegistryConfig says how to reach an image registry.
type RegistryConfig struct {
	// Insecure allows plain HTTP and a TLS certificate that is not verified. Registries
	// on loopback are reached over plain HTTP without it.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// CABundle is PEM certificates trusted for the registry's TLS, in addition to the
	// system's roots (a mirror registry with a private CA).
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	CABundle string `json:"caBundle,omitempty"`
}

// CatalogSourceSpec says where bundles come from.
// +kubebuilder:validation:XValidation:rule="self.sourceType != 'Directory' || has(self.directory)",message="spec.directory is required when spec.sourceType is Directory"
// +kubebuilder:validation:XValidation:rule="self.sourceType != 'HTTP' || has(self.url)",message="spec.url is required when spec.sourceType is HTTP"
// +kubebuilder:validation:XValidation:rule="self.sourceType != 'Image' || has(self.image)",message="spec.image is required when spec.sourceType is Image"
// +kubebuilder:validation:XValidation:rule="(self.sourceType != 'configmap' && self.sourceType != 'internal') || has(self.configMap)",message="spec.configMap (the name of a ConfigMap in the CatalogSource's namespace) is required when spec.sourceType is configmap or internal"
// +kubebuilder:validation:XValidation:rule="self.sourceType != 'grpc' || has(self.image) || has(self.address)",message="spec.sourceType grpc needs spec.image (a catalog image, read by the manager itself) or spec.address (a registry server, host:port)"
type CatalogSourceSpec struct {
	// SourceType is Directory, HTTP or Image; OLM's grpc is Image with spec.image, and a
	// registry server with only spec.address; OLM's configmap (or internal) reads the
	// ConfigMap spec.configMap names.
	SourceType SourceType `json:"sourceType"`

	// Directory is the catalog root on the manager's filesystem.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Directory string `json:"directory,omitempty"`

	// URL is the base URL of an HTTP catalog.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	URL string `json:"url,omitempty"`

	// Image is the catalog image, by tag (polled by digest at pollInterval) or by digest:
	// "quay.io/operatorhubio/catalog:latest". Its File-Based Catalog is read from the
	// directory its operators.operatorframework.io.index.configs.v1 label names.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Image string `json:"image,omitempty"`

	// PullSecret names a kubernetes.io/dockerconfigjson Secret (or a legacy
	// kubernetes.io/dockercfg one) in the CatalogSource's namespace with the credentials
	// for the catalog image and its bundle images.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PullSecret string `json:"pullSecret,omitempty"`

	// Registry says how to reach the registries of the catalog and bundle images.
	// +optional
	Registry *RegistryConfig `json:"registry,omitempty"`

	// PollInterval is how often the source is checked for a new digest, as a Go duration
	// ("30s", "10m", "1h30m"). The API server refuses anything else: a value the manager
	// cannot decode would stop it from reading every CatalogSource.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// Priority orders catalogs when several provide the same dependency (higher first).
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// DisplayName is a name for people.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// OLM's CatalogSource fields, so an OLM CatalogSource works with only its apiVersion
	// changed.

	// Publisher is who publishes the catalog, for people (OLM's field).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Publisher string `json:"publisher,omitempty"`

	// Icon is the catalog's icon, for consoles (OLM's field).
	// +optional
	Icon *CatalogIcon `json:"icon,omitempty"`

	// Secrets are further pull Secrets for the catalog and bundle images (OLM's field);
	// their credentials join spec.pullSecret's.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Secrets []string `json:"secrets,omitempty"`

	// UpdateStrategy is OLM's way to say how often to poll: its registryPoll.interval,
	// when set, is the poll interval in place of spec.pollInterval.
	// +optional
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`

	// Address is OLM's registry server address (host:port): a server of
	// operator-registry's gRPC API (`opm serve`, an OLM registry pod's Service), asked in
	// plain gRPC as OLM does. Read with sourceType grpc when spec.image is not set; the
	// catalog it lists is polled like any other (spec.pollInterval or
	// updateStrategy.registryPoll.interval).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Address string `json:"address,omitempty"`

	// ConfigMap names the ConfigMap of an OLM ConfigMap catalog (sourceType configmap or
	// internal), in the CatalogSource's namespace. Its resourceVersion is checked at the
	// poll interval, at least every minute, and the catalog read again when it changed.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ConfigMap string `json:"configMap,omitempty"`

	// GRPCPodConfig is OLM's configuration of its registry pod. It is accepted and has no
	// effect: operator-manager reads catalog images itself and runs no registry pod.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	GRPCPodConfig *apiextensionsv1.JSON `json:"grpcPodConfig,omitempty"`
}

// CatalogIcon is OLM's CatalogSource icon.
type CatalogIcon struct {
	// Data is the image, base64-encoded.
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	Data string `json:"base64data,omitempty"`
	// MediaType is the image's media type (image/png, image/svg+xml).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	MediaType string `json:"mediatype,omitempty"`
}

// UpdateStrategy is OLM's CatalogSource update strategy.
type UpdateStrategy struct {
	// RegistryPoll polls the catalog at an interval.
	// +optional
	RegistryPoll *RegistryPoll `json:"registryPoll,omitempty"`
}

// RegistryPoll is OLM's polling setting.
type RegistryPoll struct {
	// Interval is how often the catalog is checked for a new digest, as a Go duration.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// Type is how the source is read: OLM's grpc with an image is Image; grpc with only an
// address stays grpc (a registry server); internal is configmap.
func (s *CatalogSourceSpec) Type() SourceType {
	if s.SourceType == SourceGRPC && s.Image != "" {
		return SourceImage
	}
	if s.SourceType == SourceInternal {
		return SourceConfigMap
	}
	return s.SourceType
}

// Poll is how often the source is checked: OLM's updateStrategy.registryPoll.interval
// when set, else spec.pollInterval (nil when neither is).
func (s *CatalogSourceSpec) Poll() *metav1.Duration {
	if u := s.UpdateStrategy; u != nil && u.RegistryPoll != nil && u.RegistryPoll.Interval != nil {
		return u.RegistryPoll.Interval
	}
	return s.PollInterval
}

// PullSecrets names every pull Secret: spec.pullSecret, then OLM's spec.secrets.
func (s *CatalogSourceSpec) PullSecrets() []string {
	var out []string
	if s.PullSecret != "" {
		out = append(out, s.PullSecret)
	}
	for _, n := range s.Secrets {
		if n != "" && n != s.PullSecret {
			out = append(out, n)
		}
	}
	return out
}

// RejectedBundle is a bundle the catalog could not load, and why.
type RejectedBundle struct {
	// Path is the bundle's path inside the catalog.
	Path string `json:"path"`
	// Reason names the file and field at fault.
	Reason string `json:"reason"`
}

// CatalogSourceStatus says what the catalog holds and when it was read.
type CatalogSourceStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Packages is how many packages loaded.
	// +optional
	Packages int32 `json:"packages,omitempty"`
	// Bundles is how many bundles loaded.
	// +optional
	Bundles int32 `json:"bundles,omitempty"`
	// Digest identifies the catalog's content; an unchanged digest means nothing to do.
	// +optional
	Digest string `json:"digest,omitempty"`
	// ResolvedImage is the catalog image the loaded catalog came from, pinned by digest
	// (name@sha256:...), for an Image source.
	// +optional
	ResolvedImage string `json:"resolvedImage,omitempty"`
	// LastSync is when the source was last read.
	// +optional
	LastSync *metav1.Time `json:"lastSync,omitempty"`
	// ConfigMapReference is the ConfigMap the loaded catalog came from, at the
	// resourceVersion read, for a configmap source (OLM's field).
	// +optional
	ConfigMapReference *ConfigMapReference `json:"configMapReference,omitempty"`
	// ConnectionState is OLM's record of the catalog's state (READY while the catalog
	// loaded, TRANSIENT_FAILURE while its last load failed), for scripts that wait on
	// `.status.connectionState.lastObservedState`; the Ready condition says why.
	// +optional
	ConnectionState *GRPCConnectionState `json:"connectionState,omitempty"`
	// RejectedCount is how many bundles were rejected.
	// +optional
	RejectedCount int32 `json:"rejectedCount,omitempty"`
	// Rejected lists rejected bundles (the first 50) with their reasons.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Rejected []RejectedBundle `json:"rejected,omitempty"`
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GRPCConnectionState is OLM's status.connectionState of a CatalogSource.
type GRPCConnectionState struct {
	// Address is the registry server asked (spec.address), if any.
	// +optional
	Address string `json:"address,omitempty"`
	// LastObservedState is READY or TRANSIENT_FAILURE (gRPC's connectivity states, as
	// OLM reports them), or CONNECTING before the first load ends.
	LastObservedState string `json:"lastObservedState"`
	// LastConnectTime is when LastObservedState last changed.
	// +optional
	LastConnectTime metav1.Time `json:"lastConnect,omitempty"`
}

// OLM's connection states of a CatalogSource (gRPC's connectivity state names).
const (
	ConnectionReady            = "READY"
	ConnectionConnecting       = "CONNECTING"
	ConnectionTransientFailure = "TRANSIENT_FAILURE"
)

// ConfigMapReference is OLM's record of the ConfigMap a configmap catalog was read from.
type ConfigMapReference struct {
	Name            string      `json:"name"`
	Namespace       string      `json:"namespace"`
	UID             types.UID   `json:"uid,omitempty"`
	ResourceVersion string      `json:"resourceVersion,omitempty"`
	LastUpdateTime  metav1.Time `json:"lastUpdateTime,omitempty"`
}

// CatalogSource is where bundles come from.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=catsrc,categories=operator-manager
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.sourceType`
// +kubebuilder:printcolumn:name="Packages",type=integer,JSONPath=`.status.packages`
// +kubebuilder:printcolumn:name="Bundles",type=integer,JSONPath=`.status.bundles`
// +kubebuilder:printcolumn:name="Rejected",type=integer,JSONPath=`.status.rejectedCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSync`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.digest`,priority=1
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.directory`,priority=1
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.resolvedImage`,priority=1
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`,priority=1
// +kubebuilder:printcolumn:name="ConfigMap",type=string,JSONPath=`.spec.configMap`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CatalogSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CatalogSourceSpec   `json:"spec,omitempty"`
	Status CatalogSourceStatus `json:"status,omitempty"`
}

// CatalogSourceList is a list of CatalogSources.
// +kubebuilder:object:root=true
type CatalogSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CatalogSource `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CatalogSource{}, &CatalogSourceList{})
}

// CatalogKey is the CatalogSource a reference names: "namespace/name" as a Blueprint's
// spec.catalog records it, or a bare name, in namespace ns.
func CatalogKey(ref, ns string) types.NamespacedName {
	if n, name, ok := strings.Cut(ref, "/"); ok {
		return types.NamespacedName{Namespace: n, Name: name}
	}
	return types.NamespacedName{Namespace: ns, Name: ref}
}
