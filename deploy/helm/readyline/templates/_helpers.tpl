{{/*
readyline.name is the app.kubernetes.io/name of every object and the
DaemonSet's selector: "readyline" unless nameOverride. kubectl readyline
finds the daemons by it (--readyline-selector app.kubernetes.io/name=readyline).
*/}}
{{- define "readyline.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
readyline.fullname names the objects: the release name when it holds the
chart's name (helm install readyline ... gives "readyline", the names of
deploy/base), else RELEASE-readyline; fullnameOverride wins.
*/}}
{{- define "readyline.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
readyline.labels: deploy/base's labels (name, part-of) and Helm's own.
*/}}
{{- define "readyline.labels" -}}
app.kubernetes.io/name: {{ include "readyline.name" . }}
app.kubernetes.io/part-of: readyline
{{ include "readyline.helmLabels" . }}
{{- end }}

{{/*
readyline.helmLabels are the labels Helm charts carry and deploy/base does
not: the only difference the chart's equivalence test allows on an object.
*/}}
{{- define "readyline.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/*
readyline.selectorLabels select the DaemonSet's pods (its selector, the
NetworkPolicy's podSelector, the monitors'): the selector of deploy/base, which
a DaemonSet cannot change once created.
*/}}
{{- define "readyline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "readyline.name" . }}
{{- end }}

{{- define "readyline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "readyline.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the ServiceAccount to run as when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "readyline.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
readyline.configData is the ConfigMap's data: READYLINE_<FLAG>=value, the
environment twins of `readyline run`'s flags (deploy/base/readyline.env),
then config.env over them.
*/}}
{{- define "readyline.configData" -}}
{{- $c := .Values.config }}
{{- $data := dict }}
{{- if $c.otlpEndpoint }}
{{- $_ := set $data "READYLINE_OTLP_ENDPOINT" ($c.otlpEndpoint | toString) }}
{{- end }}
{{- if not (kindIs "invalid" $c.otlpInsecure) }}
{{- $_ := set $data "READYLINE_OTLP_INSECURE" ($c.otlpInsecure | toString) }}
{{- end }}
{{- if $c.logLevel }}
{{- $_ := set $data "READYLINE_LOG_LEVEL" ($c.logLevel | toString) }}
{{- end }}
{{- $alerts := list }}
{{- range $name, $threshold := $c.alerts }}
{{- if not (kindIs "invalid" $threshold) }}
{{- $alerts = append $alerts (printf "%s=%v" $name $threshold) }}
{{- end }}
{{- end }}
{{- if $alerts }}
{{- $_ := set $data "READYLINE_ALERT" (join "," $alerts) }}
{{- end }}
{{- if $c.criEndpoint }}
{{- $_ := set $data "READYLINE_CRI_ENDPOINT" ($c.criEndpoint | toString) }}
{{- end }}
{{- $_ := set $data "READYLINE_SECURE_API_ADDR" (ternary "127.0.0.1:9467" "" .Values.secureAPI.enabled) }}
{{- if .Values.aggregatedAPI.enabled }}
{{- $_ := set $data "READYLINE_NODE_API_ADDR" ":9468" }}
{{- end }}
{{- range $k, $v := $c.env }}
{{- $_ := set $data $k ($v | toString) }}
{{- end }}
{{- toJson $data }}
{{- end }}

{{/*
readyline.configMapName is the ConfigMap's name with the suffix kustomize's
configMapGenerator gives it (sigs.k8s.io/kustomize/api/hasher: the first 10
hex digits of the SHA-256 of {"data","kind","name"} as JSON, 0 1 3 a e mapped
to g h k m t): a changed setting is a new name in the pod template, which
rolls the DaemonSet, as with deploy/base, and the same settings give
deploy/base's very name. "name" is empty there: kustomize looks the name up
as a field called "metadata/name", which no ConfigMap has.
*/}}
{{- define "readyline.configMapName" -}}
{{- $name := include "readyline.fullname" . }}
{{- $data := include "readyline.configData" . | fromJson }}
{{- $hash := dict "kind" "ConfigMap" "name" "" "data" $data | toJson | sha256sum | trunc 10 }}
{{- printf "%s-%s" $name ($hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t") }}
{{- end }}

{{/*
readyline.apiName names readyline-api's objects (the aggregated API server of
readyline.dev): "readyline-api" for release readyline, as deploy/aggregated.
*/}}
{{- define "readyline.apiName" -}}
{{- printf "%s-api" (include "readyline.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
readyline.apiLabels: deploy/aggregated's labels of readyline-api's objects
and Helm's own.
*/}}
{{- define "readyline.apiLabels" -}}
app.kubernetes.io/name: {{ include "readyline.apiName" . }}
app.kubernetes.io/part-of: readyline
{{ include "readyline.helmLabels" . }}
{{- end }}

{{/*
readyline.nodeAPISecret is the daemons' Secret of the node API (serving
certificate, the CA of readyline-api's client one); readyline.apiSecret
readyline-api's (serving and client certificates, the nodes' CA).
*/}}
{{- define "readyline.nodeAPISecret" -}}
{{- printf "%s-node-api" (include "readyline.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "readyline.apiSecret" -}}
{{- printf "%s-api-certs" (include "readyline.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
