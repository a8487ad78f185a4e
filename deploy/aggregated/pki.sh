#!/usr/bin/env bash
# The certificates of readyline.dev's aggregated API (deploy/aggregated):
#
#   pki.sh secrets      make them once, as two Secrets of NAMESPACE (readyline):
#                         readyline-node-api   each daemon's: its node API's serving
#                                              certificate (name readyline-node) and
#                                              the CA of readyline-api's client one
#                         readyline-api-certs  readyline-api's: its serving certificate
#                                              (readyline-api.NAMESPACE.svc), its client
#                                              certificate to the nodes (CN
#                                              readyline-api) and the nodes' CA
#                       (kept when both are there: ROTATE=1 makes new ones)
#   pki.sh apiservice   give the APIService the CA of readyline-api's serving
#                       certificate (after `kubectl apply -k`)
#
# One CA signs the three certificates, and its key is thrown away: it never
# enters the cluster, so nobody there can issue another. A node holds only
# a certificate for serving, which no daemon accepts as a client: a fallen
# node can neither read other nodes as readyline-api nor replay anything it
# was sent (a client certificate proves its key in the handshake; there is
# no bearer token). Uses kubectl (KUBECONFIG) and openssl.
set -euo pipefail

NAMESPACE=${NAMESPACE:-readyline}
VALIDITY_DAYS=${VALIDITY_DAYS:-365}
KUBECTL=${KUBECTL:-kubectl}

die() { echo "pki.sh: $*" >&2; exit 1; }
command -v openssl >/dev/null || die "needs openssl (apt-get install openssl)"

has_secret() { "$KUBECTL" -n "$NAMESPACE" get secret "$1" >/dev/null 2>&1; }

# issue NAME SUBJECT EXTENSIONS: a key and a certificate of the CA in $dir.
issue() {
	local name=$1 subject=$2 ext=$3
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr" 2>/dev/null
	printf '%s\n' "$ext" >"$dir/$name.ext"
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
		-days "$VALIDITY_DAYS" -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
}

secrets() {
	if has_secret readyline-node-api && has_secret readyline-api-certs && [ "${ROTATE:-}" != 1 ]; then
		echo "pki.sh: the Secrets are there (ROTATE=1 makes new ones)"
		return
	fi
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$VALIDITY_DAYS" \
		-subj "/CN=readyline-ca-$(date +%s)" -keyout "$dir/ca.key" -out "$dir/ca.crt" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
	local svc="readyline-api.$NAMESPACE.svc"
	issue node "/CN=readyline-node" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:readyline-node"
	issue client "/CN=readyline-api" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
	issue serving "/CN=$svc" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$svc,DNS:$svc.cluster.local,DNS:readyline-api.$NAMESPACE"
	"$KUBECTL" get namespace "$NAMESPACE" >/dev/null 2>&1 || "$KUBECTL" create namespace "$NAMESPACE" >/dev/null
	"$KUBECTL" -n "$NAMESPACE" create secret generic readyline-node-api --dry-run=client -o yaml \
		--from-file=tls.crt="$dir/node.crt" --from-file=tls.key="$dir/node.key" --from-file=client-ca.crt="$dir/ca.crt" |
		"$KUBECTL" apply -f - >/dev/null
	"$KUBECTL" -n "$NAMESPACE" create secret generic readyline-api-certs --dry-run=client -o yaml \
		--from-file=tls.crt="$dir/serving.crt" --from-file=tls.key="$dir/serving.key" \
		--from-file=client.crt="$dir/client.crt" --from-file=client.key="$dir/client.key" \
		--from-file=node-ca.crt="$dir/ca.crt" --from-file=ca.crt="$dir/ca.crt" |
		"$KUBECTL" apply -f - >/dev/null
	echo "pki.sh: made the Secrets readyline-node-api and readyline-api-certs in $NAMESPACE (the CA's key is gone)"
}

apiservice() {
	local ca
	ca=$("$KUBECTL" -n "$NAMESPACE" get secret readyline-api-certs -o jsonpath='{.data.ca\.crt}') ||
		die "no Secret readyline-api-certs in $NAMESPACE: run pki.sh secrets first"
	[ -n "$ca" ] || die "Secret readyline-api-certs has no ca.crt"
	"$KUBECTL" patch apiservice v1alpha1.readyline.dev --type=merge -p "{\"spec\":{\"caBundle\":\"$ca\"}}" >/dev/null
	echo "pki.sh: APIService v1alpha1.readyline.dev verifies readyline-api with the Secret's CA"
}

case "${1:-}" in
secrets) secrets ;;
apiservice) apiservice ;;
*) die "usage: pki.sh secrets|apiservice (NAMESPACE=$NAMESPACE)" ;;
esac
