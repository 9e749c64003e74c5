package hookrelay

import (
	"fmt"
	"testing"
)

func TestHTTPStatus(t *testing.T) {
	for err, want := range map[error]int{
		nil:                         200,
		Errorf(ENOTFOUND, "x"):      404,
		Errorf(EGONE, "x"):          410,
		Errorf(ETIMEOUT, "x"):       504,
		Errorf(EUNAVAILABLE, "x"):   503,
		Errorf("no_such_code", "x"): 500,
		fmt.Errorf("plain"):         500,
		fmt.Errorf("w: %w", Errorf(ECONFLICT, "x")): 409,
	} {
		if got := HTTPStatus(err); got != want {
			t.Errorf("HTTPStatus(%v) = %d; want %d", err, got, want)
		}
	}
}
