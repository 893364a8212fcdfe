// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redTeamCheck runs each command (words as a POSIX shell reads them, each
// secret contains SEKRIT) through Args and through Line, and asserts that
// no SEKRIT survives.
func redTeamCheck(t *testing.T, cmds []string) {
	t.Helper()
	r, err := New(Config{})
	require.NoError(t, err)
	for _, c := range cmds {
		args := wordsOf(c)
		got, _ := r.Args(args)
		assert.NotContains(t, strings.Join(got, " "), "SEKRIT", "Args(%q) = %q", args, got)
		line, _ := r.Line("12:00:00 4242 " + strings.Join(args, " "))
		assert.NotContains(t, line, "SEKRIT", "Line(%q) = %q", args, line)
	}
}

// TestRedTeamSecrets: documented credential forms of common tools that
// came through unredacted (red team of issue 31).
func TestRedTeamSecrets(t *testing.T) {
	redTeamCheck(t, []string{
		// curl(1): -u, --user <user:password>; short options take attached values
		"curl -ubob:SEKRIT2 https://h/",
		// curl(1): --oauth2-bearer <token>
		"curl --oauth2-bearer SEKRIT3 https://h/",
		// Cloudflare API docs: -H 'X-Auth-Key: <key>'
		"curl -H 'X-Auth-Key: SEKRIT11' https://api.cloudflare.com/",
		// az storage: --account-key <key>
		"az storage blob upload --account-key SEKRIT45 -f x",
		// Azure connection strings: AccountKey=<key>;
		"az storage blob upload --connection-string 'DefaultEndpointsProtocol=https;AccountName=x;AccountKey=SEKRIT46;EndpointSuffix=core.windows.net'",
		// s3cmd(1): --secret_key=<key>
		"s3cmd --secret_key=SEKRIT73 ls",
		// skopeo-copy(1): --src-creds / --dest-creds user:password; podman --creds
		"skopeo copy --src-creds bob:SEKRIT108 docker://a docker://b",
		"skopeo copy --dest-creds=bob:SEKRIT109 docker://a docker://b",
		"podman pull --creds bob:SEKRIT110 x",
		// ssh-keygen(1): -N new_passphrase, -P passphrase
		"ssh-keygen -t ed25519 -N SEKRIT60 -f k",
		"ssh-keygen -p -P SEKRIT61 -N SEKRIT62 -f k",
		// twine upload -p <password>; cqlsh -p <password>; mosquitto_pub -P <password>
		"twine upload -u __token__ -p SEKRIT51 dist/x",
		"cqlsh -u cassandra -p SEKRIT69 host",
		"mosquitto_pub -h b -u bob -P SEKRIT66 -t x -m y",
		// etcdctl --user <name:password>
		"etcdctl --user root:SEKRIT76 get x",
	})
}

// TestRedTeamSecretsLeft: documented forms that need per-tool positional
// or SQL parsing.
func TestRedTeamSecretsLeft(t *testing.T) {
	t.Skip("redteam: positional/SQL credential forms leak, not fixed yet")
	redTeamCheck(t, []string{
		"psql -c \"ALTER USER app WITH PASSWORD 'SEKRIT70'\"",
		"mysql -e \"CREATE USER 'bob'@'%' IDENTIFIED BY 'SEKRIT71'\"",
		"kubectl create secret generic x --from-literal=key1=SEKRIT20",
		"gh secret set MY_TOKEN --body SEKRIT58",
		"gh secret set MY_TOKEN -b SEKRIT59",
		"mc alias set myminio http://minio:9000 AKEY SEKRIT72",
		"sqlplus scott/SEKRIT38@orcl",
		"lftp -u bob,SEKRIT40 ftp.example.com",
		"xfreerdp /u:bob /p:SEKRIT43 /v:host",
		"rdesktop -u bob -p SEKRIT44 host",
		"dotnet nuget push a.nupkg -k SEKRIT53 -s https://api.nuget.org",
		"openssl enc -aes-256-cbc -K 00112233SEKRIT28 -iv 0011 -in f",
		"rabbitmqctl add_user bob SEKRIT35",
		"rabbitmqctl change_password bob SEKRIT36",
		"ngrok config add-authtoken SEKRIT56",
		"nmcli dev wifi connect home password SEKRIT63",
		"wpa_passphrase home SEKRIT65",
		"http -a bob:SEKRIT84 example.org",
		"curl https://hooks.slack.com/services/T000/B000/SEKRIT103",
	})
}
