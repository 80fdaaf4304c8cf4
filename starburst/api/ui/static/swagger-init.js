// Starts Swagger UI on /docs (starburst.api.apidocs). A file of its own, not an inline
// script, so the page's Content-Security-Policy can forbid inline scripts.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: "none", // never send the document to an outside validator
  });
});
