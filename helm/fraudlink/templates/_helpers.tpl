{{/* Chart name, overridable. */}}
{{- define "fraudlink.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name prefix of every object: <release>-<chart>, or the release name when it contains the chart name. */}}
{{- define "fraudlink.fullname" -}}
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

{{/* The metrics Service's name: a Service name is a DNS label of at most 63 characters, suffix included. */}}
{{- define "fraudlink.metricsServiceName" -}}
{{- printf "%s-metrics" (include "fraudlink.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/* The table's Service name, within a DNS label's 63 characters like the metrics Service's. */}}
{{- define "fraudlink.tableServiceName" -}}
{{- printf "%s-table" (include "fraudlink.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{- define "fraudlink.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "fraudlink.labels" -}}
helm.sh/chart: {{ include "fraudlink.chart" . }}
{{ include "fraudlink.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fraudlink
{{- end }}

{{/* Labels selecting every fraudlink pod of the release (the metrics Service uses them). */}}
{{- define "fraudlink.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fraudlink.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels selecting one component's pods; call with (dict "root" $ "component" "connector"). */}}
{{- define "fraudlink.componentSelectorLabels" -}}
{{ include "fraudlink.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "fraudlink.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fraudlink.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "fraudlink.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret with the API key and passwords: the operator's, or the one the chart creates. */}}
{{- define "fraudlink.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.create }}
{{- printf "%s-secrets" (include "fraudlink.fullname" .) }}
{{- else }}
{{- fail "secrets: set secrets.existingSecret to the Secret holding the API key (or secrets.create=true with secrets.apiKey for a trial)" }}
{{- end }}
{{- end }}

{{/*
The three TLS clients (upstream, Kafka, registry), each with its Secret of PEM files mounted
read-only at /etc/fraudlink/<dir>: the values path, the mount folder and the variables' prefix.
Only the components that call the upstream (the connector and the verifier) take its client.
*/}}
{{- define "fraudlink.tlsClients" -}}
{{- list
  (dict "tls" .Values.api.tls "path" "api.tls" "dir" "api-tls" "prefix" "API_TLS" "peer" "the upstream" "upstreamOnly" true)
  (dict "tls" .Values.kafka.tls "path" "kafka.tls" "dir" "kafka-tls" "prefix" "KAFKA_TLS" "peer" "the brokers" "upstreamOnly" false)
  (dict "tls" .Values.schemaRegistry.tls "path" "schemaRegistry.tls" "dir" "registry-tls" "prefix" "SCHEMA_REGISTRY_TLS" "peer" "the registry" "upstreamOnly" false)
  | toJson }}
{{- end }}

{{/* The file variables of one TLS client (an item of fraudlink.tlsClients); settings that would be ignored or mount nothing fail. */}}
{{- define "fraudlink.tlsConfig" -}}
{{- $c := . }}
{{- with .tls }}
{{- if and .caKey (not .existingSecret) }}
{{- fail (printf "%s.caKey needs %s.existingSecret, the Secret that holds the CA bundle" $c.path $c.path) }}
{{- end }}
{{- if .existingSecret }}
{{- if ne (empty .certKey) (empty .keyKey) }}
{{- fail (printf "%s: set both certKey and keyKey (mutual TLS) or neither (only caKey, a private CA for %s)" $c.path $c.peer) }}
{{- end }}
{{- if and (empty .certKey) (empty .caKey) }}
{{- fail (printf "%s.existingSecret: set certKey and keyKey (mutual TLS), caKey (the CA of %s), or both" $c.path $c.peer) }}
{{- end }}
{{- if .certKey }}
{{ $c.prefix }}_CERT: {{ printf "/etc/fraudlink/%s/%s" $c.dir .certKey | quote }}
{{ $c.prefix }}_KEY: {{ printf "/etc/fraudlink/%s/%s" $c.dir .keyKey | quote }}
{{- end }}
{{- if .caKey }}
{{ $c.prefix }}_CA: {{ printf "/etc/fraudlink/%s/%s" $c.dir .caKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Settings the connector and the verifier read (their ConfigMaps include these); numbers through int64, see configmap.yaml. */}}
{{- define "fraudlink.commonConfig" -}}
{{ include "fraudlink.apiConfig" . }}
{{ include "fraudlink.clusterConfig" . }}
{{- end }}

{{/* The upstream service's settings (connector and verifier). */}}
{{- define "fraudlink.apiConfig" -}}
API_BASE_URL: {{ required "api.baseUrl is required (the upstream service's base address)" .Values.api.baseUrl | quote }}
API_TIMEOUT_MS: {{ .Values.api.timeoutMs | int64 | quote }}
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- if .upstreamOnly }}
{{- include "fraudlink.tlsConfig" . }}
{{- end }}
{{- end }}
ALLOW_SANDBOX_UPSTREAM: {{ .Values.allowSandboxUpstream | quote }}
{{- end }}

{{/* Kafka, registry, HTTP and logging settings: every component, the table included. */}}
{{- define "fraudlink.clusterConfig" -}}
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- if not .upstreamOnly }}
{{- include "fraudlink.tlsConfig" . }}
{{- end }}
{{- end }}
ALLOW_INSECURE_TRANSPORT: {{ .Values.allowInsecureTransport | quote }}
KAFKA_BROKERS: {{ required "kafka.brokers is required (comma-separated host:port)" .Values.kafka.brokers | quote }}
KAFKA_CLIENT_ID: {{ .Values.kafka.clientId | quote }}
KAFKA_SSL: {{ .Values.kafka.ssl | quote }}
KAFKA_COMPRESSION: {{ .Values.kafka.compression | quote }}
{{- with .Values.kafka.sasl }}
{{- if .mechanism }}
KAFKA_SASL_MECHANISM: {{ .mechanism | quote }}
{{- if eq .mechanism "oauthbearer" }}
KAFKA_SASL_OAUTH_TOKEN_URL: {{ required "kafka.sasl.oauth.tokenUrl is required with kafka.sasl.mechanism=oauthbearer" .oauth.tokenUrl | quote }}
KAFKA_SASL_OAUTH_CLIENT_ID: {{ required "kafka.sasl.oauth.clientId is required with kafka.sasl.mechanism=oauthbearer" .oauth.clientId | quote }}
{{- with .oauth.scope }}
KAFKA_SASL_OAUTH_SCOPE: {{ . | quote }}
{{- end }}
{{- else }}
KAFKA_SASL_USERNAME: {{ required "kafka.sasl.username is required with kafka.sasl.mechanism" .username | quote }}
{{- end }}
{{- end }}
{{- end }}
SCHEMA_REGISTRY_URL: {{ required "schemaRegistry.url is required" .Values.schemaRegistry.url | quote }}
{{- if .Values.schemaRegistry.username }}
SCHEMA_REGISTRY_USERNAME: {{ .Values.schemaRegistry.username | quote }}
{{- end }}
{{- if .Values.extraCaCerts.existingSecret }}
NODE_EXTRA_CA_CERTS: {{ printf "/etc/fraudlink/ca/%s" .Values.extraCaCerts.key | quote }}
{{- end }}
TOPIC_REPLICATION_FACTOR: {{ .Values.kafka.topicReplicationFactor | int64 | quote }}
HTTP_HOST: {{ .Values.httpHost | quote }}
HTTP_PORT: {{ .Values.httpPort | int64 | quote }}
LOG_LEVEL: {{ .Values.logLevel | quote }}
{{- end }}

{{/* Secret environment variables, each a secretKeyRef: values never appear in a rendered manifest. */}}
{{- define "fraudlink.secretEnv" -}}
- name: API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "fraudlink.secretName" . }}
      key: {{ .Values.secrets.keys.apiKey }}
{{- include "fraudlink.clusterSecretEnv" . }}
{{- end }}

{{/* The Kafka and registry secrets, when those are used; the table reads only these from the chart's Secret. */}}
{{- define "fraudlink.clusterSecretEnv" -}}
{{- $secret := "" }}
{{- if or .Values.kafka.sasl.mechanism .Values.schemaRegistry.username }}
{{- $secret = include "fraudlink.secretName" . }}
{{- end }}
{{- if eq .Values.kafka.sasl.mechanism "oauthbearer" }}
- name: KAFKA_SASL_OAUTH_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.secrets.keys.kafkaSaslOauthClientSecret }}
{{- else if .Values.kafka.sasl.mechanism }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.secrets.keys.kafkaSaslPassword }}
{{- end }}
{{- if .Values.schemaRegistry.username }}
- name: SCHEMA_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.secrets.keys.schemaRegistryPassword }}
{{- end }}
{{- end }}

{{/* The table's settings: the cluster's, the topic it reads and its store in the mounted volume. */}}
{{- define "fraudlink.tableConfig" -}}
{{ include "fraudlink.clusterConfig" . }}
ALERTS_TOPIC: {{ .Values.table.alertsTopic | default .Values.connector.alertsTopic | quote }}
TABLE_DB_PATH: "/var/lib/fraudlink/table.db"
{{- end }}

{{/*
The table's secret variables: its API keys from their own Secret (the keys the lookup clients
send, apart from the upstream's), and the Kafka and registry passwords when those are used.
*/}}
{{- define "fraudlink.tableSecretEnv" -}}
{{- with .Values.table.apiKeys }}
{{- if .existingSecret }}
- name: TABLE_API_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .key }}
{{- else if not .allowAnonymous }}
{{- fail "table.apiKeys.existingSecret: name the Secret holding the table's API keys (comma-separated, under table.apiKeys.key), or set table.apiKeys.allowAnonymous=true to serve lookups to any client that reaches the Service" }}
{{- end }}
{{- end }}
{{- include "fraudlink.clusterSecretEnv" . }}
{{- end }}

{{/*
Read-only mounts of the TLS Secrets (the upstream's only for components that call it: upstream
true) and the CA Secret, and a writable /tmp; call with (dict "Values" .Values "upstream" true).
*/}}
{{- define "fraudlink.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- if and .tls.existingSecret (or $.upstream (not .upstreamOnly)) }}
- name: {{ .dir }}
  mountPath: {{ printf "/etc/fraudlink/%s" .dir }}
  readOnly: true
{{- end }}
{{- end }}
{{- if .Values.extraCaCerts.existingSecret }}
- name: extra-ca
  mountPath: /etc/fraudlink/ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "fraudlink.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 16Mi
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- $dir := .dir }}
{{- if or $.upstream (not .upstreamOnly) }}
{{- with .tls }}
{{- if .existingSecret }}
- name: {{ $dir }}
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0440
    items:
      {{- if .certKey }}
      - key: {{ .certKey }}
        path: {{ .certKey }}
      - key: {{ .keyKey }}
        path: {{ .keyKey }}
      {{- end }}
      {{- if .caKey }}
      - key: {{ .caKey }}
        path: {{ .caKey }}
      {{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.extraCaCerts }}
{{- if .existingSecret }}
- name: extra-ca
  secret:
    secretName: {{ .existingSecret }}
    defaultMode: 0444
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}
{{- end }}
{{- end }}

{{/* Probes on the metrics port; numbers through int64, see configmap.yaml. */}}
{{- define "fraudlink.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: {{ .Values.probes.startup.periodSeconds | int64 }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold | int64 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: {{ .Values.probes.liveness.periodSeconds | int64 }}
  timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds | int64 }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold | int64 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: {{ .Values.probes.readiness.periodSeconds | int64 }}
  timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds | int64 }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold | int64 }}
{{- end }}

{{/*
The pod template of one component; call with
(dict "root" $ "component" "connector" "settings" .Values.connector "args" (list "connector" "run")).
The table adds "config" (its settings, for the checksum), "secretEnv" (its secret variables, in
place of the upstream's API key and the passwords), "volumeMounts" and "volumes" (its store), and
"upstream" false (it calls no upstream, so mounts no upstream TLS Secret).
*/}}
{{- define "fraudlink.podTemplate" -}}
{{- $root := .root -}}
{{- $settings := .settings -}}
{{- $upstream := ternary true .upstream (kindIs "invalid" .upstream) -}}
{{- /* Not `default`: it would render the upstream's settings, and require them, for the table too. */ -}}
{{- $config := .config -}}
{{- if kindIs "invalid" $config }}{{ $config = include "fraudlink.commonConfig" $root }}{{ end -}}
{{- $secretEnv := .secretEnv -}}
{{- if kindIs "invalid" $secretEnv }}{{ $secretEnv = include "fraudlink.secretEnv" $root }}{{ end -}}
{{- $mountContext := dict "Values" $root.Values "upstream" $upstream -}}
metadata:
  labels:
    {{- include "fraudlink.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $settings.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- /* Rolls the pods when their settings change. */}}
    checksum/config: {{ print $config (toJson $settings) | sha256sum }}
    {{- if and $root.Values.secrets.create (not $root.Values.secrets.existingSecret) }}
    checksum/secret: {{ toJson $root.Values.secrets | sha256sum }}
    {{- end }}
    {{- with $settings.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "fraudlink.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $settings.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ $settings.terminationGracePeriodSeconds | int64 }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  containers:
    - name: {{ .component }}
      image: {{ include "fraudlink.image" $root | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args:
        {{- toYaml .args | nindent 8 }}
      envFrom:
        - configMapRef:
            name: {{ include "fraudlink.fullname" $root }}-{{ .component }}
      {{- $extraEnv := concat ($root.Values.extraEnv | default list) ($settings.extraEnv | default list) }}
      {{- if or (trim $secretEnv) $extraEnv }}
      env:
        {{- with trim $secretEnv }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with $extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: metrics
          containerPort: {{ $root.Values.httpPort | int64 }}
          protocol: TCP
      {{- include "fraudlink.probes" $root | nindent 6 }}
      resources:
        {{- toYaml $settings.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        {{- include "fraudlink.volumeMounts" $mountContext | nindent 8 }}
        {{- with .volumeMounts }}
        {{- . | trim | nindent 8 }}
        {{- end }}
  volumes:
    {{- include "fraudlink.volumes" $mountContext | nindent 4 }}
    {{- with .volumes }}
    {{- . | trim | nindent 4 }}
    {{- end }}
  {{- with $settings.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $settings.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if $settings.affinity }}
  affinity:
    {{- toYaml $settings.affinity | nindent 4 }}
  {{- else if has .component (list "verifier" "table") }}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                {{- include "fraudlink.componentSelectorLabels" (dict "root" $root "component" .component) | nindent 16 }}
  {{- end }}
{{- end }}
