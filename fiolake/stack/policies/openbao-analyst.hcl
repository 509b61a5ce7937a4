# Analyst (app, SQL users): read-only object-store credentials, no transit access.
path "secret/data/fiolake/analyst" {
  capabilities = ["read"]
}
