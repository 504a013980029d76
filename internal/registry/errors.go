package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/operator-manager/operator-manager/internal/ociparts"
)

// isDigestError reports whether go-containerregistry refused content because it did not
// match its digest: a manifest fetched by digest ("manifest digest: ... does not match
// requested digest") or a blob that fails its check at the end of the read ("error
// verifying sha256 checksum ...", "error verifying size ..."). The types of these errors
// are in its internal packages, or plain fmt errors, so their text is all there is to
// tell them from a network failure by.
func isDigestError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "does not match requested digest") || strings.Contains(s, "error verifying")
}

// explain rewrites an error of an operation on ref (what: "pulling", "resolving", ...)
// into one naming the reference and the reason in words a person can act on. The cause
// stays wrapped; a digest mismatch wraps ociparts.ErrDigestMismatch, a timeout
// context.DeadlineExceeded.
func explain(what, ref string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ociparts.ErrDigestMismatch) {
		return fmt.Errorf("%s %s: %w", what, ref, err)
	}
	if isDigestError(err) {
		return fmt.Errorf("%s %s: %w: the registry served other content than the digest names: %w", what, ref, ociparts.ErrDigestMismatch, err)
	}
	return fmt.Errorf("%s %s: %s: %w", what, ref, reason(ref, err), err)
}

// reason says in words why an operation on ref failed; the error itself follows it.
func reason(ref string, err error) string {
	reg := registryOf(ref)
	// TLS and network failures first: a plain HTTP attempt a client makes besides the
	// HTTPS one (for a loopback registry) fails with an HTTP status that says less.
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("timed out waiting for the registry %s", reg)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &unknownCA):
		return fmt.Sprintf("TLS: the certificate of the registry %s is signed by an unknown authority: trust its CA (a CA bundle, --ca-file), or allow an insecure registry", reg)
	case errors.As(err, &hostErr):
		return fmt.Sprintf("TLS: the certificate of the registry %s is not valid for that name (%v)", reg, hostErr)
	case errors.As(err, &invalid):
		return fmt.Sprintf("TLS: the certificate of the registry %s is not valid: %v", reg, invalid)
	case errors.As(err, &verify):
		return fmt.Sprintf("TLS: the certificate of the registry %s could not be verified", reg)
	case errors.As(err, &recordErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("the registry %s speaks plain HTTP, not HTTPS: allow it as an insecure registry", reg)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot connect to the registry %s: connection refused", reg)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Sprintf("unauthorized: the registry %s refused the credentials given for it, or needs some (a pull secret, docker login)", reg)
		case http.StatusForbidden:
			return fmt.Sprintf("forbidden: the registry %s does not let these credentials read or write this repository", reg)
		case http.StatusNotFound:
			return fmt.Sprintf("not found: the registry %s has no such repository, tag or digest", reg)
		case http.StatusTooManyRequests:
			return fmt.Sprintf("rate limited by the registry %s: try again later, or with credentials", reg)
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.UnauthorizedErrorCode:
				return fmt.Sprintf("unauthorized: the registry %s refused the credentials given for it, or needs some (a pull secret, docker login)", reg)
			case transport.DeniedErrorCode:
				return fmt.Sprintf("forbidden: the registry %s does not let these credentials read or write this repository", reg)
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return fmt.Sprintf("not found: the registry %s has no such repository, tag or digest", reg)
			}
		}
		return fmt.Sprintf("the registry %s answered %d %s", reg, te.StatusCode, http.StatusText(te.StatusCode))
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Sprintf("cannot find the registry %s: %v", reg, dnsErr)
	}
	return fmt.Sprintf("registry %s", reg)
}

// registryOf returns the registry host of a reference, or the reference when it does not
// parse.
func registryOf(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return ref
	}
	return r.Context().RegistryStr()
}
