package v1

// OLM's Subscription fields are other names for this API's own (see SubscriptionSpec).
// Everything that reads a Subscription's package, catalog or approval goes through these
// methods, so the two spellings cannot mean different things in different places.

// PackageName is the package the Subscription asks for: spec.package, else OLM's
// spec.name ("" when only startingCSV names it).
func (s *SubscriptionSpec) PackageName() string {
	if s.Package != "" {
		return s.Package
	}
	return s.Name
}

// OLMStyle reports whether the Subscription is written in OLM's words (spec.name), which
// gives spec.startingCSV OLM's meaning: where the first install starts, not a pin.
func (s *SubscriptionSpec) OLMStyle() bool { return s.Name != "" }

// CatalogName is the CatalogSource named by spec.catalog or OLM's spec.source ("" for the
// manager's default catalog).
func (s *SubscriptionSpec) CatalogName() string {
	if s.Catalog != "" {
		return s.Catalog
	}
	return s.Source
}

// CatalogNamespace is the namespace of the CatalogSource named, for a Subscription in
// namespace ns: OLM's spec.sourceNamespace, else ns itself.
func (s *SubscriptionSpec) CatalogNamespace(ns string) string {
	if s.SourceNamespace != "" {
		return s.SourceNamespace
	}
	return ns
}

// CatalogRef is the CatalogSource named, "namespace/name" as a Blueprint records it, for
// a Subscription in namespace ns; empty when none is named (the manager's default).
func (s *SubscriptionSpec) CatalogRef(ns string) string {
	if name := s.CatalogName(); name != "" {
		return s.CatalogNamespace(ns) + "/" + name
	}
	return ""
}

// ApprovalMode is spec.approval, else OLM's spec.installPlanApproval, else Automatic.
func (s *SubscriptionSpec) ApprovalMode() Approval {
	switch {
	case s.Approval != "":
		return s.Approval
	case s.InstallPlanApproval != "":
		return s.InstallPlanApproval
	}
	return ApprovalAutomatic
}

// ApprovesFirstInstall reports whether the first install waits for approval too: OLM's
// installPlanApproval: Manual means every InstallPlan, the first one included. This API's
// own approval: Manual lets a first install go ahead, as it always has (it guards the
// running operator against version changes).
func (s *SubscriptionSpec) ApprovesFirstInstall() bool {
	return s.InstallPlanApproval == ApprovalManual
}
