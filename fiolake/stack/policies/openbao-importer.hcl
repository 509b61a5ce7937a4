# Importer (`fiolake import`): adds results of fio runs made elsewhere. Needs no signing
# key (it publishes nothing and verifies no manifest). Reads only its own credentials.
path "secret/data/fiolake/importer" {
  capabilities = ["read"]
}
