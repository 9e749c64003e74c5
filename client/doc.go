// Package client is a Go client of the hookrelay API, generated from
// openapi/openapi.json by oapi-codegen (make generate; make check-generated
// fails when it is stale). NewClientWithResponses gives one method per
// route, named by the route's operationId (EndpointEventsPullWithResponse,
// EndpointEventsAckWithResponse, ...); authenticate with a RequestEditorFn
// that sets the Authorization header:
//
//	c, err := client.NewClientWithResponses("http://127.0.0.1:8080",
//		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
//			r.Header.Set("Authorization", "Bearer "+key)
//			return nil
//		}))
//
// A pull event's Body is the callback's bytes as received, over which its
// Webhook-Signature header is made.
package client
