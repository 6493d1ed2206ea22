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
*/}}
{{- define "fraudlink.tlsClients" -}}
{{- list
  (dict "tls" .Values.api.tls "path" "api.tls" "dir" "api-tls" "prefix" "API_TLS" "peer" "the upstream")
  (dict "tls" .Values.kafka.tls "path" "kafka.tls" "dir" "kafka-tls" "prefix" "KAFKA_TLS" "peer" "the brokers")
  (dict "tls" .Values.schemaRegistry.tls "path" "schemaRegistry.tls" "dir" "registry-tls" "prefix" "SCHEMA_REGISTRY_TLS" "peer" "the registry")
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

{{/* Settings both components read (their ConfigMaps include these); numbers through int64, see configmap.yaml. */}}
{{- define "fraudlink.commonConfig" -}}
API_BASE_URL: {{ required "api.baseUrl is required (the upstream service's base address)" .Values.api.baseUrl | quote }}
API_TIMEOUT_MS: {{ .Values.api.timeoutMs | int64 | quote }}
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- include "fraudlink.tlsConfig" . }}
{{- end }}
ALLOW_INSECURE_TRANSPORT: {{ .Values.allowInsecureTransport | quote }}
ALLOW_SANDBOX_UPSTREAM: {{ .Values.allowSandboxUpstream | quote }}
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
{{- $secret := include "fraudlink.secretName" . -}}
- name: API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.secrets.keys.apiKey }}
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

{{/* Read-only mounts of the mutual-TLS and CA Secrets, and a writable /tmp. */}}
{{- define "fraudlink.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range (include "fraudlink.tlsClients" . | fromJsonArray) }}
{{- if .tls.existingSecret }}
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
*/}}
{{- define "fraudlink.podTemplate" -}}
{{- $root := .root -}}
{{- $settings := .settings -}}
metadata:
  labels:
    {{- include "fraudlink.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $settings.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- /* Rolls the pods when their settings change. */}}
    checksum/config: {{ print (include "fraudlink.commonConfig" $root) (toJson $settings) | sha256sum }}
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
      env:
        {{- include "fraudlink.secretEnv" $root | nindent 8 }}
        {{- with $root.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $settings.extraEnv }}
        {{- toYaml . | nindent 8 }}
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
        {{- include "fraudlink.volumeMounts" $root | nindent 8 }}
  volumes:
    {{- include "fraudlink.volumes" $root | nindent 4 }}
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
  {{- else if eq .component "verifier" }}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                {{- include "fraudlink.componentSelectorLabels" (dict "root" $root "component" "verifier") | nindent 16 }}
  {{- end }}
{{- end }}
