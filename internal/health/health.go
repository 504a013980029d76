// Package health judges whether an installed operator is healthy, from the real state of
// its Deployments and their pods. Each check is a small pure function; Deployment runs
// them in order, the first that decides wins (a policy chain, as cert-manager's).
package health

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// State is a health verdict's outcome.
type State string

const (
	// Progressing: not healthy yet, not failed either; look again later.
	Progressing State = "Progressing"
	// Healthy: every replica runs the new template and is available.
	Healthy State = "Healthy"
	// Failed: it will not become healthy without a change.
	Failed State = "Failed"
)

// Reasons, CamelCase, for conditions and events.
const (
	ReasonAvailable           = "DeploymentAvailable"
	ReasonRollingOut          = "RollingOut"
	ReasonProgressDeadline    = "ProgressDeadlineExceeded"
	ReasonCrashLoop           = "PodsCrashLooping"
	ReasonTimeout             = "HealthTimeout"
	ReasonNotObserved         = "GenerationNotObserved"
	ReasonDeploymentMissing   = "DeploymentMissing"
	crashLoopRestartThreshold = 3
)

// Verdict is the outcome for one Deployment or for an operator as a whole.
type Verdict struct {
	State   State
	Reason  string
	Message string
}

// Input is what a check may look at: one Deployment, the pods its selector matches, when
// the rollout started, the timeout, and the time now (injected for tests).
type Input struct {
	Deployment *appsv1.Deployment
	Pods       []corev1.Pod
	// CurrentHash is the pod-template-hash of the Deployment's newest ReplicaSet, if known.
	CurrentHash string
	Started     time.Time
	Timeout     time.Duration
	Now         time.Time
}

// check returns a verdict when it decides, nil to pass on to the next.
type check func(in Input) *Verdict

// chain is the order of judgement: failures that are certain first, success next, and the
// timeout last so that a Deployment that just became Available is never failed for time.
var chain = []check{notObserved, progressDeadlineExceeded, crashLooping, available, timedOut}

// Deployment judges one Deployment.
func Deployment(in Input) Verdict {
	for _, c := range chain {
		if v := c(in); v != nil {
			return *v
		}
	}
	return Verdict{Progressing, ReasonRollingOut, rolloutProgress(in.Deployment)}
}

func notObserved(in Input) *Verdict {
	d := in.Deployment
	if d.Status.ObservedGeneration >= d.Generation {
		return nil
	}
	if v := timedOut(in); v != nil {
		return v
	}
	return &Verdict{Progressing, ReasonNotObserved, fmt.Sprintf("deployment %s: waiting for the deployment controller to observe generation %d", d.Name, d.Generation)}
}

func progressDeadlineExceeded(in Input) *Verdict {
	for _, c := range in.Deployment.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return &Verdict{Failed, ReasonProgressDeadline, fmt.Sprintf("deployment %s exceeded its progress deadline: %s; %s",
				in.Deployment.Name, c.Message, podProblems(in.Pods, 3))}
		}
	}
	return nil
}

// crashLooping fails on pods whose containers keep crashing or cannot start: waiting
// for a person is the only way forward for them.
func crashLooping(in Input) *Verdict {
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil || !ofCurrentTemplate(in, &p) {
			continue
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
				return &Verdict{Failed, ReasonCrashLoop, fmt.Sprintf("deployment %s: pod %s container %s is %s (restarted %d times): %s",
					in.Deployment.Name, p.Name, cs.Name, w.Reason, cs.RestartCount, w.Message)}
			}
			if cs.RestartCount >= crashLoopRestartThreshold && !cs.Ready {
				return &Verdict{Failed, ReasonCrashLoop, fmt.Sprintf("deployment %s: pod %s container %s restarted %d times and is not ready",
					in.Deployment.Name, p.Name, cs.Name, cs.RestartCount)}
			}
		}
	}
	return nil
}

var fatalWaiting = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

func available(in Input) *Verdict {
	d := in.Deployment
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > s.UpdatedReplicas {
		return nil
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return &Verdict{Healthy, ReasonAvailable, fmt.Sprintf("deployment %s: %d/%d replicas updated and available", d.Name, s.AvailableReplicas, want)}
		}
	}
	return nil
}

func timedOut(in Input) *Verdict {
	if in.Timeout <= 0 || in.Started.IsZero() || in.Now.Sub(in.Started) < in.Timeout {
		return nil
	}
	return &Verdict{Failed, ReasonTimeout, fmt.Sprintf("deployment %s not available within %s: %s; %s",
		in.Deployment.Name, in.Timeout, rolloutProgress(in.Deployment), podProblems(in.Pods, 3))}
}

func rolloutProgress(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return fmt.Sprintf("%d/%d replicas updated, %d available", d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas)
}

// ofCurrentTemplate is true for pods of the Deployment's current template (when the
// caller knows its pod-template-hash), so the crash of an old pod during a rollout does
// not fail the new version.
func ofCurrentTemplate(in Input, p *corev1.Pod) bool {
	return in.CurrentHash == "" || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == in.CurrentHash
}

// podProblems describes why pods are not ready, for messages: the first n.
func podProblems(pods []corev1.Pod, n int) string {
	var out []string
	for _, p := range pods {
		if len(out) == n {
			break
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				why := c.Reason
				if c.Message != "" {
					why += ": " + c.Message
				}
				if why == "" {
					why = string(p.Status.Phase)
				}
				out = append(out, fmt.Sprintf("pod %s not ready (%s)", p.Name, why))
			}
		}
		if p.Spec.NodeName == "" {
			out = append(out, fmt.Sprintf("pod %s not scheduled", p.Name))
		}
	}
	if len(out) == 0 {
		return "no pod problems seen"
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// Operator combines the verdicts of an operator's Deployments: failed if any failed,
// healthy if all are, progressing otherwise. An operator without Deployments is healthy.
func Operator(verdicts []Verdict) Verdict {
	var progressing []string
	for _, v := range verdicts {
		if v.State == Failed {
			return v
		}
		if v.State == Progressing {
			progressing = append(progressing, v.Message)
		}
	}
	if len(progressing) > 0 {
		return Verdict{Progressing, ReasonRollingOut, strings.Join(progressing, "; ")}
	}
	return Verdict{Healthy, ReasonAvailable, fmt.Sprintf("%d deployments available", len(verdicts))}
}
