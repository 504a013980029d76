// Package health judges whether an installed operator is healthy, from the real state of
// its Deployments, their ReplicaSets and their pods. Each check is a small pure function;
// Deployment runs them in order, the first that decides wins (a policy chain, as
// cert-manager's).
package health

import (
	"fmt"
	"sort"
	"strconv"
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
	ReasonAvailable         = "DeploymentAvailable"
	ReasonRollingOut        = "RollingOut"
	ReasonProgressDeadline  = "ProgressDeadlineExceeded"
	ReasonCrashLoop         = "PodsCrashLooping"
	ReasonTimeout           = "HealthTimeout"
	ReasonNotObserved       = "GenerationNotObserved"
	ReasonDeploymentMissing = "DeploymentMissing"
	// ReasonImagePullBackOff: a container's image cannot be pulled yet; waited on until
	// the timeout, as a registry outage heals by itself.
	ReasonImagePullBackOff = "ImagePullBackOff"
	// ReasonReplicaFailure: the newest ReplicaSet (or the Deployment) cannot create pods,
	// for example for a missing PriorityClass or an exhausted quota; waited on until the
	// timeout, as a person or another controller may create what is missing.
	ReasonReplicaFailure = "ReplicaFailure"

	crashLoopRestartThreshold = 3
	// revisionAnnotation is the deployment controller's revision of a ReplicaSet.
	revisionAnnotation = "deployment.kubernetes.io/revision"
	// maxProblems bounds each list of problems in a message, so that a hundred broken
	// replicas do not make a condition message of a hundred lines.
	maxProblems = 3
)

// Verdict is the outcome for one Deployment or for an operator as a whole.
type Verdict struct {
	State   State
	Reason  string
	Message string
}

// Input is what a check may look at: one Deployment, the pods its selector matches, the
// ReplicaSets it controls, when the rollout started, the timeout, and the time now
// (injected for tests).
type Input struct {
	Deployment *appsv1.Deployment
	Pods       []corev1.Pod
	// ReplicaSets are the ReplicaSets the Deployment controls; the newest of them tells
	// why pods are missing (a ReplicaFailure condition such as FailedCreate).
	ReplicaSets []appsv1.ReplicaSet
	// CurrentHash is the pod-template-hash of the Deployment's newest ReplicaSet, if known.
	CurrentHash string
	Started     time.Time
	Timeout     time.Duration
	Now         time.Time
}

// check returns a verdict when it decides, nil to pass on to the next.
type check func(in Input) *Verdict

// chain is the order of judgement: failures that are certain first, success next, and the
// timeout after them so that a Deployment that just became Available is never failed for
// time. Last come the waits worth naming: within the timeout they only explain why the
// rollout is still Progressing, and after it timedOut puts the same problems in its message.
var chain = []check{notObserved, progressDeadlineExceeded, crashLooping, available, timedOut, pullingImage, replicaFailing, slowRollout}

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

// progressDeadlineExceeded fails when the deployment controller itself gave up; the
// message adds what is known of why, as the condition only says that it timed out.
func progressDeadlineExceeded(in Input) *Verdict {
	for _, c := range in.Deployment.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return &Verdict{Failed, ReasonProgressDeadline, fmt.Sprintf("deployment %s exceeded its progress deadline: %s; %s",
				in.Deployment.Name, c.Message, problems(in))}
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
		for _, cs := range containerStatuses(&p) {
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

// fatalWaiting are the waiting reasons that do not heal by themselves. An image pull
// failure is not among them (see pullWaiting): a short registry outage must not roll an
// upgrade back. InvalidImageName is: a malformed reference never becomes pullable.
var fatalWaiting = map[string]bool{
	"CrashLoopBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// pullWaiting are the waiting reasons of an image the kubelet cannot pull yet and retries.
var pullWaiting = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true}

func available(in Input) *Verdict {
	d := in.Deployment
	want := wantedReplicas(d)
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

// Serving reports whether a Deployment's pods serve, whatever its rollout: the deployment
// controller counts it Available (enough replicas available for its strategy), with at
// least one available when any is wanted. A running version that rolls its pods again (a
// `kubectl rollout restart`, a drift repair) serves all along; judged live, that is no
// fault, where the health gate asks more of a new version (every replica updated).
func Serving(d *appsv1.Deployment) bool {
	if wantedReplicas(d) > 0 && d.Status.AvailableReplicas == 0 {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NeedsPods reports whether judging d needs its pods and ReplicaSets. They explain a
// wait or a failure (which container crashes, which image cannot be pulled, why no pod
// was created); a Deployment whose controller has observed its generation and reports
// every wanted replica updated and available, no old replica left and the Available
// condition True is judged Healthy from itself. Its pods are all ready, or it would not
// count them available: a pod crash-looping now shows in the Deployment's status within
// moments, and the next check (a health gate's, or the live re-check after it) reads the
// pods again. Skipping two LISTs on every healthy check is what keeps a fleet's health
// checks cheap.
//
// Nor are they needed while the controller has not observed the Deployment's generation
// (the first check after an apply, as a rule): the verdict then is notObserved's, which
// the pods cannot change, as no pod of that generation exists yet; only a timeout's
// message names what they show. in gives the Deployment and the gate's timing.
func NeedsPods(in Input) bool {
	d := in.Deployment
	if d.Status.ObservedGeneration < d.Generation {
		return pastTimeout(in)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return available(Input{Deployment: d}) == nil
}

// pastTimeout says whether the gate's time is up.
func pastTimeout(in Input) bool {
	return in.Timeout > 0 && !in.Started.IsZero() && in.Now.Sub(in.Started) >= in.Timeout
}

func timedOut(in Input) *Verdict {
	if !pastTimeout(in) {
		return nil
	}
	return &Verdict{Failed, ReasonTimeout, fmt.Sprintf("deployment %s not available within %s: %s; %s",
		in.Deployment.Name, in.Timeout, rolloutProgress(in.Deployment), problems(in))}
}

// pullingImage keeps waiting on an image that cannot be pulled yet, and names it, so
// that a person watching the rollout sees the registry problem before the timeout.
func pullingImage(in Input) *Verdict {
	if s := imagePullProblem(in); s != "" {
		return &Verdict{Progressing, ReasonImagePullBackOff, fmt.Sprintf("deployment %s: %s", in.Deployment.Name, s)}
	}
	return nil
}

// replicaFailing keeps waiting on a ReplicaSet that cannot create pods, and says why:
// without it the rollout looks merely slow, as no pod exists to show a problem.
func replicaFailing(in Input) *Verdict {
	if s := replicaFailure(in); s != "" {
		return &Verdict{Progressing, ReasonReplicaFailure, fmt.Sprintf("deployment %s: %s", in.Deployment.Name, s)}
	}
	return nil
}

// slowAfter is how long a rollout goes before its progress names the pods that hold it
// back: most rollouts finish sooner, and their pods are only starting.
const slowAfter = 30 * time.Second

// slowRollout names, once a rollout has taken slowAfter, the pods that are not ready and
// why (a readiness probe failing, a pod not scheduled), so that a person watching sees the
// cause minutes before the timeout says it.
func slowRollout(in Input) *Verdict {
	if in.Started.IsZero() || in.Now.Sub(in.Started) < slowAfter {
		return nil
	}
	why := podProblems(in, maxProblems)
	if len(why) == 0 {
		return nil
	}
	return &Verdict{Progressing, ReasonRollingOut, rolloutProgress(in.Deployment) + "; " + strings.Join(why, "; ")}
}

// rolloutProgress says how far a rollout is. Available counts the old pods as well as the
// new, so while old ones still run it says so: "1/1 replicas updated, 1 available" alone
// reads as a healthy rollout when the one available pod is the old version's.
func rolloutProgress(d *appsv1.Deployment) string {
	msg := fmt.Sprintf("%d/%d replicas updated, %d available", d.Status.UpdatedReplicas, wantedReplicas(d), d.Status.AvailableReplicas)
	switch old := d.Status.Replicas - d.Status.UpdatedReplicas; {
	case old == 1:
		msg += ", 1 old replica still running"
	case old > 1:
		msg += fmt.Sprintf(", %d old replicas still running", old)
	}
	return msg
}

// wantedReplicas is the Deployment's replicas, 1 when unset as the API server defaults it.
func wantedReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	return 1
}

// ofCurrentTemplate is true for pods of the Deployment's current template (when the
// caller knows its pod-template-hash), so the crash of an old pod during a rollout does
// not fail the new version.
func ofCurrentTemplate(in Input, p *corev1.Pod) bool {
	return in.CurrentHash == "" || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == in.CurrentHash
}

// containerStatuses are a pod's init and app container statuses, init first as they run
// first.
func containerStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// problems names what holds a rollout back, the most specific first: an image that
// cannot be pulled, pods the ReplicaSet cannot create, then pods missing, not scheduled
// or not ready.
func problems(in Input) string {
	var out []string
	for _, s := range []string{imagePullProblem(in), replicaFailure(in)} {
		if s != "" {
			out = append(out, s)
		}
	}
	out = append(out, podProblems(in, maxProblems)...)
	if len(out) == 0 {
		return "no pod problems seen"
	}
	return strings.Join(out, "; ")
}

// imagePullProblem describes the first container of a current pod whose image cannot be
// pulled, with the image and the kubelet's message; "" when there is none.
func imagePullProblem(in Input) string {
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil || !ofCurrentTemplate(in, &p) {
			continue
		}
		for _, cs := range containerStatuses(&p) {
			if w := cs.State.Waiting; w != nil && pullWaiting[w.Reason] {
				what := w.Reason
				if img := imageOf(&p, &cs); img != "" {
					what += fmt.Sprintf(": image %q", img)
				}
				return fmt.Sprintf("pod %s container %s: %s", p.Name, cs.Name, joinReason(what, w.Message))
			}
		}
	}
	return ""
}

// imageOf is the image a container was asked to run: the pod spec's, as the status may
// hold a resolved or an empty reference while the pull fails.
func imageOf(p *corev1.Pod, cs *corev1.ContainerStatus) string {
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == cs.Name && c.Image != "" {
			return c.Image
		}
	}
	return cs.Image
}

// replicaFailure describes why pods cannot be created: the newest ReplicaSet's
// ReplicaFailure condition (it names the ReplicaSet), else the Deployment's, which the
// deployment controller copies from a ReplicaSet; "" when neither has one.
func replicaFailure(in Input) string {
	if rs := newestReplicaSet(in); rs != nil {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				return fmt.Sprintf("replica set %s cannot create pods: %s", rs.Name, joinReason(c.Reason, c.Message))
			}
		}
	}
	for _, c := range in.Deployment.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return "cannot create pods: " + joinReason(c.Reason, c.Message)
		}
	}
	return ""
}

// newestReplicaSet is the ReplicaSet of the current template: the one with CurrentHash
// when known, else the one of the highest revision; nil when there is none. An old
// ReplicaSet's failure does not concern the new version.
func newestReplicaSet(in Input) *appsv1.ReplicaSet {
	var newest *appsv1.ReplicaSet
	newestRev := int64(-1)
	for i := range in.ReplicaSets {
		rs := &in.ReplicaSets[i]
		if in.CurrentHash != "" && rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == in.CurrentHash {
			return rs
		}
		rev, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
		if err != nil {
			rev = 0
		}
		if rev > newestRev {
			newest, newestRev = rs, rev
		}
	}
	return newest
}

// podProblems describes why pods are not ready, for messages: that none exist, else the
// first n problems, unscheduled pods first as the more specific.
func podProblems(in Input, n int) []string {
	var unscheduled, notReady []string
	live := 0
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Spec.NodeName == "" {
			// Not being ready is implied; why it is not scheduled is what helps.
			unscheduled = append(unscheduled, fmt.Sprintf("pod %s not scheduled%s", p.Name, conditionWhy(&p, corev1.PodScheduled)))
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				why := joinReason(c.Reason, c.Message)
				if why == "" {
					why = string(p.Status.Phase)
				}
				notReady = append(notReady, fmt.Sprintf("pod %s not ready (%s)", p.Name, why))
			}
		}
	}
	if want := wantedReplicas(in.Deployment); live == 0 && want > 0 {
		return []string{fmt.Sprintf("no pods exist for %d wanted replicas", want)}
	}
	sort.Strings(unscheduled)
	sort.Strings(notReady)
	out := append(unscheduled, notReady...)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// conditionWhy is " (reason: message)" of a pod's condition of type t that is not True,
// "" when there is none to tell.
func conditionWhy(p *corev1.Pod, t corev1.PodConditionType) string {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status != corev1.ConditionTrue {
			if why := joinReason(c.Reason, c.Message); why != "" {
				return " (" + why + ")"
			}
		}
	}
	return ""
}

// joinReason is "reason: message", leaving out what is empty.
func joinReason(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
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
	apis := 0
	for _, v := range verdicts {
		if v.Reason == ReasonAPIServiceAvailable {
			apis++
		}
	}
	msg := count(len(verdicts)-apis, "deployment") + " available"
	if apis > 0 {
		msg += ", " + count(apis, "APIService") + " available"
	}
	return Verdict{Healthy, ReasonAvailable, msg}
}

// count says "1 deployment", "2 deployments".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
