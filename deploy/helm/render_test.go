// Package helm_test renders the hookrelay chart with Helm's own engine and
// decodes every object strictly into the Kubernetes API types: a field
// misspelt or misplaced in a template fails here, not at `helm install`.
package helm_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// required are the values without which the chart refuses to render.
func required() map[string]any {
	return map[string]any{
		"s3": map[string]any{"endpoint": "http://minio:9000"},
		"secret": map[string]any{"databaseURL": "postgres://hookrelay:pw@pg:5432/hookrelay", "adminToken": "hra_0123456789abcdef",
			"encryptionKey": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},
	}
}

// objects is what a chart renders to, decoded by kind.
type objects struct {
	Deployments     map[string]*appsv1.Deployment
	Services        map[string]*corev1.Service
	Secrets         map[string]*corev1.Secret
	Jobs            map[string]*batchv1.Job
	PDBs            map[string]*policyv1.PodDisruptionBudget
	HPAs            map[string]*autoscalingv2.HorizontalPodAutoscaler
	ServiceMonitors map[string]*monitoringv1.ServiceMonitor
	ServiceAccounts map[string]*corev1.ServiceAccount
	Notes           string
}

// render renders the chart for release "prod" with vals over the chart's
// values.yaml, as `helm template` would.
func render(t *testing.T, vals map[string]any) (objects, error) {
	t.Helper()
	chrt, err := loader.Load(filepath.Join("hookrelay"))
	require.NoError(t, err)
	caps := common.DefaultCapabilities.Copy()
	rv, err := util.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: "prod", Namespace: "hooks", IsInstall: true, Revision: 1}, caps)
	require.NoError(t, err)
	files, err := engine.Render(chrt, rv)
	if err != nil {
		return objects{}, err
	}
	return decode(t, files), nil
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode reads every rendered document strictly: unknown or duplicate fields
// fail, and every kind must be one the chart is meant to make.
func decode(t *testing.T, files map[string]string) objects {
	t.Helper()
	o := objects{
		Deployments: map[string]*appsv1.Deployment{}, Services: map[string]*corev1.Service{},
		Secrets: map[string]*corev1.Secret{}, Jobs: map[string]*batchv1.Job{},
		PDBs: map[string]*policyv1.PodDisruptionBudget{}, HPAs: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		ServiceMonitors: map[string]*monitoringv1.ServiceMonitor{}, ServiceAccounts: map[string]*corev1.ServiceAccount{},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			o.Notes = files[name]
			continue
		}
		for _, doc := range docSep.Split(files[name], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &head), "%s:\n%s", name, doc)
			key := head.APIVersion + "/" + head.Kind
			strict := func(into any) {
				t.Helper()
				require.NoError(t, yaml.UnmarshalStrict([]byte(doc), into), "%s (%s %s):\n%s", name, key, head.Metadata.Name, doc)
			}
			n := head.Metadata.Name
			require.Empty(t, validation.IsDNS1123Subdomain(n), "%s name %q", key, n)
			switch key {
			case "apps/v1/Deployment":
				v := &appsv1.Deployment{}
				strict(v)
				o.Deployments[n] = v
			case "v1/Service":
				v := &corev1.Service{}
				strict(v)
				require.Empty(t, validation.IsDNS1035Label(n), "a Service name is a DNS-1035 label: %q", n)
				o.Services[n] = v
			case "v1/Secret":
				v := &corev1.Secret{}
				strict(v)
				o.Secrets[n] = v
			case "batch/v1/Job":
				v := &batchv1.Job{}
				strict(v)
				o.Jobs[n] = v
			case "policy/v1/PodDisruptionBudget":
				v := &policyv1.PodDisruptionBudget{}
				strict(v)
				o.PDBs[n] = v
			case "autoscaling/v2/HorizontalPodAutoscaler":
				v := &autoscalingv2.HorizontalPodAutoscaler{}
				strict(v)
				o.HPAs[n] = v
			case "monitoring.coreos.com/v1/ServiceMonitor":
				v := &monitoringv1.ServiceMonitor{}
				strict(v)
				o.ServiceMonitors[n] = v
			case "v1/ServiceAccount":
				v := &corev1.ServiceAccount{}
				strict(v)
				o.ServiceAccounts[n] = v
			default:
				t.Fatalf("%s renders an unexpected kind %s", name, key)
			}
		}
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

var roles = []string{"api", "dispatch", "maintenance", "web"}

func TestChartDefaults(t *testing.T) {
	o, err := render(t, required())
	require.NoError(t, err)

	require.Len(t, o.Deployments, 4)
	for _, role := range roles {
		d := o.Deployments["prod-hookrelay-"+role]
		require.NotNil(t, d, "deployment of %s", role)
		checkRolePod(t, o, d, role)
		require.Contains(t, o.Services, "prod-hookrelay-"+role, "every role serves /metrics")
		svc := o.Services["prod-hookrelay-"+role]
		require.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector, "service %s selects the role's pods", role)
	}
	// The HPA owns the api's replica count; the others have theirs.
	require.Nil(t, o.Deployments["prod-hookrelay-api"].Spec.Replicas)
	require.Equal(t, int32(2), *o.Deployments["prod-hookrelay-dispatch"].Spec.Replicas)
	require.Equal(t, int32(2), *o.Deployments["prod-hookrelay-maintenance"].Spec.Replicas)

	hpa := o.HPAs["prod-hookrelay-api"]
	require.NotNil(t, hpa)
	require.Equal(t, "Deployment", hpa.Spec.ScaleTargetRef.Kind)
	require.Equal(t, "prod-hookrelay-api", hpa.Spec.ScaleTargetRef.Name)
	require.Equal(t, int32(8), hpa.Spec.MaxReplicas)
	require.Len(t, o.HPAs, 1)

	require.ElementsMatch(t, []string{"prod-hookrelay-api", "prod-hookrelay-dispatch", "prod-hookrelay-maintenance"}, keys(o.PDBs))
	for name, pdb := range o.PDBs {
		d := o.Deployments[name]
		require.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, name)
		require.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue(), name)
	}

	job := o.Jobs["prod-hookrelay-migrate"]
	require.NotNil(t, job, "migration job")
	require.Equal(t, "pre-install,pre-upgrade", job.Annotations["helm.sh/hook"])
	require.Contains(t, job.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation")
	jc := job.Spec.Template.Spec.Containers[0]
	require.Equal(t, []string{"migrate"}, jc.Args)
	require.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy)
	checkSecurity(t, job.Spec.Template.Spec, jc)
	checkEnv(t, o, jc)

	// The Secret is a hook made before the Job that reads it.
	sec := o.Secrets["prod-hookrelay-config"]
	require.NotNil(t, sec)
	require.Equal(t, "pre-install,pre-upgrade", sec.Annotations["helm.sh/hook"])
	require.Less(t, weight(t, sec.Annotations), weight(t, job.Annotations))
	require.Equal(t, "postgres://hookrelay:pw@pg:5432/hookrelay", sec.StringData["DATABASE_URL"])
	require.NotContains(t, sec.StringData, "AWS_ACCESS_KEY_ID", "no empty credentials: the SDK chain (IRSA, instance role) applies")

	require.Empty(t, o.ServiceMonitors, "ServiceMonitor only when asked (its CRD may be missing)")
	require.Contains(t, o.Notes, "prod-hookrelay-api:8080/v1/callbacks")
}

// checkRolePod asserts what every role's pod must have: its role as the
// argument, the probes on the routes the product serves, the security
// context and the configuration from the Secret.
func checkRolePod(t *testing.T, o objects, d *appsv1.Deployment, role string) {
	t.Helper()
	require.Equal(t, d.Spec.Selector.MatchLabels, pick(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels), "selector matches the pod template")
	require.Equal(t, role, d.Spec.Template.Labels["app.kubernetes.io/component"])
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, []string{"serve", "--roles", role}, c.Args)
	require.Equal(t, "hookrelay:0.1.0", c.Image)
	require.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}, c.Ports,
		"the image listens on 0.0.0.0:8080 (HOOKRELAY_ADDR)")
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/healthz", c.StartupProbe.HTTPGet.Path)
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		require.Equal(t, "http", p.HTTPGet.Port.String())
	}
	// The process waits 30 s for its database, then migrates: the startup
	// probe must allow that before the liveness probe may kill it.
	require.GreaterOrEqual(t, c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold, int32(60))
	require.Equal(t, int64(60), *spec.TerminationGracePeriodSeconds)
	require.Equal(t, "prod-hookrelay", spec.ServiceAccountName)
	require.Contains(t, o.ServiceAccounts, spec.ServiceAccountName)
	require.NotNil(t, c.Resources.Requests.Cpu(), "the HPA needs a CPU request")
	require.False(t, c.Resources.Requests.Cpu().IsZero())
	checkSecurity(t, spec, c)
	checkEnv(t, o, c)
}

func checkSecurity(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := spec.SecurityContext, c.SecurityContext
	require.True(t, *psc.RunAsNonRoot)
	require.Equal(t, int64(65532), *psc.RunAsUser, "the image's user")
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.False(t, *spec.AutomountServiceAccountToken, "no pod talks to the Kubernetes API")
	// The writable paths are volumes: the data dir and /tmp.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	require.Equal(t, map[string]string{"/data": "data", "/tmp": "tmp"}, mounts)
	for _, v := range spec.Volumes {
		require.NotNil(t, v.EmptyDir, v.Name)
	}
}

// checkEnv: the configuration reaches the container, every Secret key it
// names exists (or is optional), and names are valid environment names.
func checkEnv(t *testing.T, o objects, c corev1.Container) {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		require.Empty(t, validation.IsEnvVarName(e.Name), e.Name)
		_, dup := env[e.Name]
		require.False(t, dup, "env %s twice", e.Name)
		env[e.Name] = e
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			sec := o.Secrets[ref.SecretKeyRef.Name]
			if sec == nil {
				continue // existingSecret: the user's
			}
			_, ok := sec.StringData[ref.SecretKeyRef.Key]
			require.True(t, ok || (ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional), "env %s: key %s in secret", e.Name, ref.SecretKeyRef.Key)
		}
	}
	for _, name := range []string{"DATABASE_URL", "HOOKRELAY_ADMIN_TOKEN", "HOOKRELAY_ENCRYPTION_KEY"} {
		require.NotNil(t, env[name].ValueFrom, "%s from the Secret, never a plain value", name)
	}
	require.Equal(t, "http://minio:9000", env["HOOKRELAY_S3_ENDPOINT"].Value)
}

func TestChartRolesAndOptions(t *testing.T) {
	vals := required()
	vals["roles"] = map[string]any{
		"web":         map[string]any{"enabled": false},
		"maintenance": map[string]any{"enabled": false},
		"api": map[string]any{
			"autoscaling": map[string]any{"enabled": false},
			"replicas":    3,
			"env":         map[string]any{"HOOKRELAY_INGEST_MEMORY": 536870912, "HOOKRELAY_REQUIRE_HTTPS": "false"},
		},
		"dispatch": map[string]any{"pdb": map[string]any{"enabled": false}},
	}
	vals["env"] = map[string]any{"HOOKRELAY_REQUIRE_HTTPS": "true", "HOOKRELAY_LOG_LEVEL": "debug"}
	vals["serviceMonitor"] = map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}}
	vals["migration"] = map[string]any{"enabled": false}
	vals["image"] = map[string]any{"repository": "registry.example/hookrelay", "tag": "v1.2.3"}
	vals["secret"].(map[string]any)["s3AccessKeyID"] = "minio"
	vals["secret"].(map[string]any)["s3SecretAccessKey"] = "minio-secret"
	o, err := render(t, vals)
	require.NoError(t, err)

	require.ElementsMatch(t, []string{"prod-hookrelay-api", "prod-hookrelay-dispatch"}, keys(o.Deployments))
	require.ElementsMatch(t, []string{"prod-hookrelay-api", "prod-hookrelay-dispatch"}, keys(o.Services))
	require.Empty(t, o.HPAs)
	require.Empty(t, o.Jobs)
	require.ElementsMatch(t, []string{"prod-hookrelay-api"}, keys(o.PDBs))
	api := o.Deployments["prod-hookrelay-api"]
	require.Equal(t, int32(3), *api.Spec.Replicas)
	c := api.Spec.Template.Spec.Containers[0]
	require.Equal(t, "registry.example/hookrelay:v1.2.3", c.Image)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	require.Equal(t, "536870912", env["HOOKRELAY_INGEST_MEMORY"], "numbers are passed as written, not 5.36870912e+08")
	require.Equal(t, "false", env["HOOKRELAY_REQUIRE_HTTPS"], "a role's env wins over the chart-wide env")
	require.Equal(t, "debug", env["HOOKRELAY_LOG_LEVEL"])
	dispatchEnv := o.Deployments["prod-hookrelay-dispatch"].Spec.Template.Spec.Containers[0].Env
	require.True(t, slices.ContainsFunc(dispatchEnv, func(e corev1.EnvVar) bool { return e.Name == "HOOKRELAY_REQUIRE_HTTPS" && e.Value == "true" }))

	sm := o.ServiceMonitors["prod-hookrelay"]
	require.NotNil(t, sm)
	require.Equal(t, "kube-prometheus", sm.Labels["release"])
	require.Len(t, sm.Spec.Endpoints, 1)
	require.Equal(t, "http", sm.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	for name, svc := range o.Services {
		require.Equal(t, sm.Spec.Selector.MatchLabels, pick(svc.Labels, sm.Spec.Selector.MatchLabels), "the ServiceMonitor selects %s", name)
	}
	sec := o.Secrets["prod-hookrelay-config"]
	require.Equal(t, "minio", sec.StringData["AWS_ACCESS_KEY_ID"])
	checkEnv(t, o, c)
}

func TestChartExistingSecret(t *testing.T) {
	vals := map[string]any{"s3": map[string]any{"endpoint": "https://s3.eu-west-1.amazonaws.com"}, "existingSecret": "hookrelay-prod"}
	o, err := render(t, vals)
	require.NoError(t, err)
	require.Empty(t, o.Secrets)
	for name, d := range o.Deployments {
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom != nil {
				require.Equal(t, "hookrelay-prod", e.ValueFrom.SecretKeyRef.Name, name)
			}
		}
	}
}

// TestChartRefusesIncompleteValues: the chart fails to render, naming the
// value to set, rather than starting pods that cannot work.
func TestChartRefusesIncompleteValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"no S3 endpoint", func(v map[string]any) { delete(v, "s3") }, "s3.endpoint is required"},
		{"no database", func(v map[string]any) { delete(v["secret"].(map[string]any), "databaseURL") }, "secret.databaseURL"},
		{"short admin token", func(v map[string]any) { v["secret"].(map[string]any)["adminToken"] = "short" }, "secret.adminToken"},
		{"no encryption key", func(v map[string]any) { v["secret"].(map[string]any)["encryptionKey"] = "" }, "secret.encryptionKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := required()
			tc.edit(vals)
			_, err := render(t, vals)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestChartLongReleaseName: names stay within Kubernetes' limits.
func TestChartLongReleaseName(t *testing.T) {
	chrt, err := loader.Load("hookrelay")
	require.NoError(t, err)
	rel := strings.Repeat("a", 53)
	rv, err := util.ToRenderValues(chrt, required(), common.ReleaseOptions{Name: rel, Namespace: "x", IsInstall: true}, common.DefaultCapabilities.Copy())
	require.NoError(t, err)
	files, err := engine.Render(chrt, rv)
	require.NoError(t, err)
	o := decode(t, files)
	for name := range o.Services {
		require.LessOrEqual(t, len(name), 63, name)
	}
	require.Len(t, o.Deployments, 4)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// pick returns the entries of m whose keys are in want.
func pick(m, want map[string]string) map[string]string {
	out := map[string]string{}
	for k := range want {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func weight(t *testing.T, ann map[string]string) int {
	t.Helper()
	var w int
	_, err := fmt.Sscan(ann["helm.sh/hook-weight"], &w)
	require.NoError(t, err)
	return w
}
