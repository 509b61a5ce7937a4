# Compactor (`fiolake lake compact`): its object-store credentials only, no transit access.
path "secret/data/fiolake/compactor" {
  capabilities = ["read"]
}
