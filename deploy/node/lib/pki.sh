# shellcheck shell=bash
# PKI and kubeconfigs of the node, made with openssl. ECDSA P-256 keys: quick to
# generate and accepted everywhere Kubernetes takes a key (including the
# service-account signing key, ES256).

# Client certificates: file name, common name (the user), organization (the group).
# The names are the ones Kubernetes' default RBAC bindings expect.
CLIENT_CERTS=(
	"admin|readyline-admin|system:masters"
	"kubelet|system:node:@NODE@|system:nodes"
	"apiserver-kubelet-client|kube-apiserver-kubelet-client|system:masters"
	"controller-manager|system:kube-controller-manager|"
	"scheduler|system:kube-scheduler|"
	"kube-proxy|system:kube-proxy|"
)

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# new_ca NAME CN creates a self-signed CA $PKI_DIR/NAME.{crt,key}.
new_ca() {
	new_key "$PKI_DIR/$1.key"
	openssl req -x509 -new -key "$PKI_DIR/$1.key" -subj "/CN=$2" -days 3650 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$PKI_DIR/$1.crt" 2>/dev/null || die "creating CA $1 failed"
}

# sign NAME SUBJECT EXTENSIONS [CA] issues $PKI_DIR/NAME.crt for a new key
# $PKI_DIR/NAME.key, signed by CA (default: ca).
sign() {
	local name=$1 subject=$2 ext=$3 ca=${4:-ca}
	new_key "$PKI_DIR/$name.key"
	openssl req -new -key "$PKI_DIR/$name.key" -subj "$subject" |
		openssl x509 -req -CA "$PKI_DIR/$ca.crt" -CAkey "$PKI_DIR/$ca.key" -CAcreateserial \
			-CAserial "$PKI_DIR/$ca.srl" -days 365 -out "$PKI_DIR/$name.crt" \
			-extfile <(printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "$ext") \
			2>/dev/null || die "signing the $name certificate failed"
}

make_pki() {
	rm -rf "$PKI_DIR" && mkdir -p "$PKI_DIR" && chmod 700 "$PKI_DIR"
	new_ca ca readyline-node-ca

	sign apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,IP:$NODE_IP"
	sign kubelet-serving "/CN=$NODE_NAME" "extendedKeyUsage=serverAuth
subjectAltName=DNS:$NODE_NAME,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"

	local spec file cn org subject
	for spec in "${CLIENT_CERTS[@]}"; do
		IFS='|' read -r file cn org <<<"${spec//@NODE@/$NODE_NAME}"
		subject="/CN=$cn"
		[[ -n $org ]] && subject="/O=$org$subject"
		sign "$file" "$subject" "extendedKeyUsage=clientAuth"
	done

	# Front proxy: the API server authenticates to aggregated API servers with
	# this client certificate; kube-controller-manager and kube-scheduler read
	# its CA from the extension-apiserver-authentication ConfigMap.
	new_ca front-proxy-ca readyline-node-front-proxy-ca
	sign front-proxy-client "/CN=front-proxy-client" "extendedKeyUsage=clientAuth" front-proxy-ca

	# Service-account token signing key pair (apiserver verifies, controller-manager
	# and apiserver sign).
	new_key "$PKI_DIR/sa.key"
	openssl pkey -in "$PKI_DIR/sa.key" -pubout -out "$PKI_DIR/sa.pub" 2>/dev/null
	chmod 600 "$PKI_DIR"/*.key
}

# write_kubeconfig FILE CERT_NAME [SERVER] writes a kubeconfig with embedded
# credentials, for the API server at SERVER (default: this node's loopback).
write_kubeconfig() {
	local file=$1 cert=$2 server=${3:-https://127.0.0.1:6443}
	(
		umask 077
		cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: readyline-node
    cluster:
      server: $server
      certificate-authority-data: $(base64 -w0 "$PKI_DIR/ca.crt")
users:
  - name: $cert
    user:
      client-certificate-data: $(base64 -w0 "$PKI_DIR/$cert.crt")
      client-key-data: $(base64 -w0 "$PKI_DIR/$cert.key")
contexts:
  - name: readyline-node
    context: {cluster: readyline-node, user: $cert}
current-context: readyline-node
EOF
	)
}

make_kubeconfigs() {
	local name
	write_kubeconfig "$ADMIN_KUBECONFIG" admin
	for name in kubelet controller-manager scheduler kube-proxy; do
		write_kubeconfig "$NODE_DIR/$name.kubeconfig" "$name"
	done
}
