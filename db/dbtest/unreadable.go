package dbtest

import (
	"context"
	"fmt"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// SealSecretsUnderUnknownKey replaces every signing secret of endpoint id
// with one sealed under a fresh key that no store holds, as a process
// with another encryption key would have written it, and returns that
// key's id: the store can no longer open the endpoint's secrets.
func SealSecretsUnderUnknownKey(ctx context.Context, store *db.DB, id int64) (string, error) {
	other, err := keyring.Parse(keyring.Generate(), "")
	if err != nil {
		return "", err
	}
	q, err := queries(ctx, store)
	if err != nil {
		return "", err
	}
	n, err := q.EndpointSecretsReplace(ctx, dbsqlc.EndpointSecretsReplaceParams{
		EndpointID: id, Secret: other.Seal("endpoint_secret", []byte("whsec_c2VhbGVkIHVuZGVyIGFub3RoZXIga2V5")),
	})
	if err != nil {
		return "", fmt.Errorf("dbtest: replace the secrets of endpoint %d: %w", id, err)
	}
	if n == 0 {
		return "", fmt.Errorf("dbtest: endpoint %d has no secret", id)
	}
	return other.CurrentID(), nil
}
