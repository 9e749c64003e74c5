// Package deploy_test checks deploy/compose.yaml without Docker: it is
// decoded strictly into the part of the Compose format it uses (a misspelt
// key fails), and the services are wired the way the product needs.
package deploy_test

import (
	"bytes"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type composeFile struct {
	XHookrelay any                       `yaml:"x-hookrelay"`
	Services   map[string]composeService `yaml:"services"`
	Volumes    map[string]struct{}       `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	User        string            `yaml:"user"`
	ReadOnly    bool              `yaml:"read_only"`
	Tmpfs       []string          `yaml:"tmpfs"`
	Restart     string            `yaml:"restart"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Command     []string `yaml:"command"`
	Ports       []string `yaml:"ports"`
	Volumes     []string `yaml:"volumes"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
	Deploy *struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

func TestCompose(t *testing.T) {
	raw, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	// yaml.v3, as Compose itself reads it: a key of a service overrides
	// the one merged from the x-hookrelay anchor.
	var c composeFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&c))
	for _, s := range c.Services {
		for k, v := range s.Environment {
			s.Environment[k] = withDefaults(v)
		}
	}

	require.ElementsMatch(t, []string{"postgres", "minio", "migrate", "api", "dispatch", "maintenance"}, keysOf(c.Services))
	pg, minio := c.Services["postgres"], c.Services["minio"]

	for name, s := range c.Services {
		for dep, d := range s.DependsOn {
			target, ok := c.Services[dep]
			require.True(t, ok, "%s depends on unknown %s", name, dep)
			require.Contains(t, []string{"service_started", "service_healthy", "service_completed_successfully"}, d.Condition, name)
			if d.Condition == "service_healthy" {
				require.NotNil(t, target.Healthcheck, "%s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, v := range s.Volumes {
			named, _, _ := strings.Cut(v, ":")
			require.Contains(t, c.Volumes, named, "%s mounts an undeclared volume", name)
		}
	}

	var roles []string
	for _, name := range []string{"migrate", "api", "dispatch", "maintenance"} {
		s := c.Services[name]
		require.Contains(t, s.Image, "hookrelay", name)
		require.Equal(t, "65532:65532", s.User, "%s runs as the image's user", name)
		require.True(t, s.ReadOnly, "%s: read-only root", name)
		require.Equal(t, []string{"/tmp"}, s.Tmpfs, name)

		db, err := url.Parse(s.Environment["DATABASE_URL"])
		require.NoError(t, err, name)
		require.Equal(t, "postgres:5432", db.Host, "%s reaches the postgres service", name)
		require.Equal(t, "/"+pg.Environment["POSTGRES_DB"], db.Path, name)
		require.Equal(t, pg.Environment["POSTGRES_USER"], db.User.Username(), name)
		pw, _ := db.User.Password()
		require.Equal(t, pg.Environment["POSTGRES_PASSWORD"], pw, name)

		s3, err := url.Parse(s.Environment["HOOKRELAY_S3_ENDPOINT"])
		require.NoError(t, err, name)
		require.Equal(t, "minio:9000", s3.Host, "%s uses the minio service, not the embedded store", name)
		require.Equal(t, minio.Environment["MINIO_ROOT_USER"], s.Environment["AWS_ACCESS_KEY_ID"], name)
		require.Equal(t, minio.Environment["MINIO_ROOT_PASSWORD"], s.Environment["AWS_SECRET_ACCESS_KEY"], name)
		require.Contains(t, s.Environment["HOOKRELAY_ADMIN_TOKEN"], "${HOOKRELAY_ADMIN_TOKEN:?", "%s: compose refuses to start without a token", name)
		require.Contains(t, s.Environment["HOOKRELAY_ENCRYPTION_KEY"], "${HOOKRELAY_ENCRYPTION_KEY:?", "%s: compose refuses to start without an encryption key", name)
		require.Equal(t, "service_healthy", s.DependsOn["postgres"].Condition, name)

		if name == "migrate" {
			require.Equal(t, []string{"migrate"}, s.Command)
			require.Equal(t, "no", s.Restart, "migrate runs once")
			continue
		}
		require.Equal(t, "service_completed_successfully", s.DependsOn["migrate"].Condition, "%s starts after the migrations", name)
		require.Equal(t, "service_healthy", s.DependsOn["minio"].Condition, name)
		require.Len(t, s.Command, 3, name)
		require.Equal(t, []string{"serve", "--roles"}, s.Command[:2], name)
		roles = append(roles, strings.Split(s.Command[2], ",")...)
	}
	slices.Sort(roles)
	require.Equal(t, []string{"api", "dispatch", "maintenance", "web"}, roles, "every role runs exactly once")
	require.Equal(t, []string{"8080:8080"}, c.Services["api"].Ports, "the image listens on 8080")
}

// defaultVar is ${NAME:-default}, which Compose replaces by the default
// when NAME is unset.
var defaultVar = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)

// withDefaults interpolates v as Compose would with none of its variables set.
func withDefaults(v string) string {
	return defaultVar.ReplaceAllString(v, "$1")
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
