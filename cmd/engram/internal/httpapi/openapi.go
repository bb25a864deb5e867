package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the API, served at /openapi.json.
// A test checks its paths and methods against the route table and its
// schemas against the request and response types.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the API (a copy).
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

func serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(openAPI)
	return nil
}
