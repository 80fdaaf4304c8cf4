{{/*
Names, labels and the values computed once per render.

Terms:
- fullname: the prefix of every object (release-chart, or fullnameOverride).
- the chart Secret: holds database-url and admin-token unless existing Secrets are named.
- generated values (in-chart PostgreSQL password, bootstrap admin token) are read back from the
  installed Secret (lookup) so an upgrade keeps them, and memoised in .Values so every template
  of one render sees the same value.
*/}}

{{- define "starburst.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "starburst.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "starburst.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "starburst.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "starburst.selectorLabels" -}}
app.kubernetes.io/name: {{ include "starburst.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "controller") */}}
{{- define "starburst.componentSelector" -}}
{{ include "starburst.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "starburst.componentLabels" -}}
{{ include "starburst.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "starburst.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "starburst.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "starburst.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "starburst.secretName" -}}
{{- printf "%s" (include "starburst.fullname" .) -}}
{{- end -}}

{{- define "starburst.postgresqlName" -}}
{{- printf "%s-postgresql" (include "starburst.fullname" .) -}}
{{- end -}}

{{/* A value of the installed chart Secret (base64-decoded), or "" before the first install. */}}
{{- define "starburst.installedSecretValue" -}}
{{- $secret := lookup "v1" "Secret" .root.Release.Namespace (include "starburst.secretName" .root) -}}
{{- if and $secret $secret.data (hasKey $secret.data .key) -}}
{{- index $secret.data .key | b64dec -}}
{{- end -}}
{{- end -}}

{{/* The in-chart PostgreSQL password: given, installed, else generated (memoised). */}}
{{- define "starburst.postgresqlPassword" -}}
{{- if not (hasKey .Values "__postgresqlPassword") -}}
{{- $installed := include "starburst.installedSecretValue" (dict "root" . "key" "postgresql-password") -}}
{{- $_ := set .Values "__postgresqlPassword" (coalesce .Values.postgresql.password $installed (randAlphaNum 32)) -}}
{{- end -}}
{{- index .Values "__postgresqlPassword" -}}
{{- end -}}

{{/* The database URL the chart Secret carries ("" when an existing Secret holds it). */}}
{{- define "starburst.databaseUrl" -}}
{{- if .Values.postgresql.enabled -}}
{{- printf "postgresql://%s:%s@%s:5432/%s" .Values.postgresql.user (include "starburst.postgresqlPassword" .) (include "starburst.postgresqlName" .) .Values.postgresql.database -}}
{{- else -}}
{{- .Values.database.url -}}
{{- end -}}
{{- end -}}

{{- define "starburst.databaseSecretName" -}}
{{- if and .Values.database.existingSecret (not .Values.postgresql.enabled) -}}
{{- .Values.database.existingSecret -}}
{{- else -}}
{{- include "starburst.secretName" . -}}
{{- end -}}
{{- end -}}

{{- define "starburst.databaseSecretKey" -}}
{{- if and .Values.database.existingSecret (not .Values.postgresql.enabled) -}}
{{- .Values.database.existingSecretKey -}}
{{- else -}}
database-url
{{- end -}}
{{- end -}}

{{/* The bootstrap admin token: given, installed, else generated (memoised). */}}
{{- define "starburst.adminToken" -}}
{{- if not (hasKey .Values "__adminToken") -}}
{{- $installed := include "starburst.installedSecretValue" (dict "root" . "key" "admin-token") -}}
{{- $_ := set .Values "__adminToken" (coalesce .Values.bootstrapAdmin.token $installed (printf "sb_%s" (randAlphaNum 43))) -}}
{{- end -}}
{{- index .Values "__adminToken" -}}
{{- end -}}

{{- define "starburst.adminSecretName" -}}
{{- default (include "starburst.secretName" .) .Values.bootstrapAdmin.existingSecret -}}
{{- end -}}

{{- define "starburst.adminSecretKey" -}}
{{- if .Values.bootstrapAdmin.existingSecret -}}
{{- .Values.bootstrapAdmin.existingSecretKey -}}
{{- else -}}
admin-token
{{- end -}}
{{- end -}}

{{/* Whether the chart creates its own Secret at all. */}}
{{- define "starburst.chartSecretNeeded" -}}
{{- if or .Values.postgresql.enabled (not .Values.database.existingSecret) (and .Values.bootstrapAdmin.enabled (not .Values.bootstrapAdmin.existingSecret)) (include "starburst.skypilotTokenInChartSecret" .) -}}
true
{{- end -}}
{{- end -}}

{{/* The SkyPilot API server's service-account token: set at all, and kept in the chart Secret. */}}
{{- define "starburst.skypilotToken" -}}
{{- $token := .Values.cloud.skypilot.apiServer.token -}}
{{- if and (eq .Values.cloud.provider "skypilot") (or $token.existingSecret $token.value) -}}
true
{{- end -}}
{{- end -}}

{{- define "starburst.skypilotTokenInChartSecret" -}}
{{- if and (include "starburst.skypilotToken" .) (not .Values.cloud.skypilot.apiServer.token.existingSecret) -}}
true
{{- end -}}
{{- end -}}

{{- define "starburst.skypilotTokenKey" -}}
{{- if .Values.cloud.skypilot.apiServer.token.existingSecret -}}
{{- .Values.cloud.skypilot.apiServer.token.existingSecretKey -}}
{{- else -}}
skypilot-token
{{- end -}}
{{- end -}}

{{/* Where the pods see the token (settings: skypilot_api_token_file). */}}
{{- define "starburst.skypilotTokenDir" -}}
/var/run/secrets/skypilot
{{- end -}}

{{/* The chart Secret's data (shared by the Secret and its pre-install hook copy). */}}
{{- define "starburst.secretData" -}}
{{- if or .Values.postgresql.enabled (not .Values.database.existingSecret) }}
database-url: {{ include "starburst.databaseUrl" . | b64enc | quote }}
{{- end }}
{{- if .Values.postgresql.enabled }}
postgresql-password: {{ include "starburst.postgresqlPassword" . | b64enc | quote }}
{{- end }}
{{- if and .Values.bootstrapAdmin.enabled (not .Values.bootstrapAdmin.existingSecret) }}
admin-token: {{ include "starburst.adminToken" . | b64enc | quote }}
{{- end }}
{{- if include "starburst.skypilotTokenInChartSecret" . }}
skypilot-token: {{ .Values.cloud.skypilot.apiServer.token.value | b64enc | quote }}
{{- end }}
{{- end -}}

{{/* settings.yaml: the Starburst settings file (keys are starburst.settings.Settings fields). */}}
{{- define "starburst.settingsFile" -}}
{{- $fixed := dict
  "cluster" "kubernetes"
  "cloud" .Values.cloud.provider
  "api_host" "0.0.0.0"
  "api_port" (int .Values.port)
  "leader_election" "lease"
  "leader_name" (include "starburst.fullname" .)
  "lease_namespace" .Release.Namespace
  "state_dir" "/var/lib/starburst/state"
-}}
{{- /* a directory the controller makes 0700 in the emptyDir (the emptyDir is root's) */}}
{{- if .Values.priceTable }}
{{- $_ := set $fixed "price_table" "/etc/starburst/prices.yaml" }}
{{- end }}
{{- if eq .Values.cloud.provider "skypilot" }}
{{- with .Values.cloud.skypilot.apiServer.endpoint }}
{{- $_ := set $fixed "skypilot_api_server" . }}
{{- end }}
{{- if include "starburst.skypilotToken" . }}
{{- $_ := set $fixed "skypilot_api_token_file" (printf "%s/token" (include "starburst.skypilotTokenDir" .)) }}
{{- end }}
{{- end }}
{{- $settings := merge $fixed (deepCopy .Values.settings) }}
{{- /* Helm drops a null that overrides a default of values.yaml, so these nullable settings
spell null "none" (tests/helm/values_schema.py lists them: none_spelled). */}}
{{- range $key := list "queue_cap" }}
{{- if eq (toString (index $settings $key | default "")) "none" }}
{{- $_ := set $settings $key nil }}
{{- end }}
{{- end }}
{{- toYaml $settings }}
{{- end -}}

{{/* The ConfigMap's data (shared by the ConfigMap and its pre-install hook copy). */}}
{{- define "starburst.configData" -}}
settings.yaml: |
{{ include "starburst.settingsFile" . | indent 2 }}
{{- if .Values.priceTable }}
prices.yaml: |
{{ toYaml .Values.priceTable | indent 2 }}
{{- end }}
{{- end -}}

{{/* Environment shared by every Starburst container. */}}
{{- define "starburst.env" -}}
- name: STARBURST_CONFIG
  value: /etc/starburst/settings.yaml
- name: STARBURST_STATE_DIR  {{- /* the image's variable would win over the settings file */}}
  value: /var/lib/starburst/state
- name: STARBURST_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName | default (include "starburst.databaseSecretName" .root) }}
      key: {{ include "starburst.databaseSecretKey" .root }}
- name: HOME
  value: /home/starburst
{{- if eq .root.Values.cloud.provider "skypilot" }}
{{- with .root.Values.cloud.skypilot.apiServer }}
{{- if .existingSecret }}
- name: STARBURST_SKYPILOT_API_SERVER
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .existingSecretKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "starburst.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end -}}

{{- define "starburst.containerSecurityContext" -}}
{{ toYaml .Values.securityContext }}
{{- end -}}

{{/* Volumes of a Starburst pod: settings, scratch space, cloud credentials. */}}
{{- define "starburst.volumes" -}}
- name: config
  configMap:
    name: {{ .configMap | default (include "starburst.fullname" .root) }}
- name: state
  emptyDir: {}
- name: home
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- if and (eq .root.Values.cloud.provider "skypilot") .root.Values.cloud.skypilot.credentials.existingSecret }}
- name: cloud-credentials
  secret:
    secretName: {{ .root.Values.cloud.skypilot.credentials.existingSecret }}
    defaultMode: 0400
{{- end }}
{{- if include "starburst.skypilotToken" .root }}
- name: skypilot-token
  secret:
    secretName: {{ .root.Values.cloud.skypilot.apiServer.token.existingSecret | default .secret | default (include "starburst.secretName" .root) }}
    items:
      - key: {{ include "starburst.skypilotTokenKey" .root }}
        path: token
    defaultMode: 0400
{{- end }}
{{- end -}}

{{- define "starburst.volumeMounts" -}}
- name: config
  mountPath: /etc/starburst
  readOnly: true
- name: state
  mountPath: /var/lib/starburst
- name: home
  mountPath: /home/starburst
- name: tmp
  mountPath: /tmp
{{- if and (eq .Values.cloud.provider "skypilot") .Values.cloud.skypilot.credentials.existingSecret }}
{{- range .Values.cloud.skypilot.credentials.files }}
- name: cloud-credentials
  mountPath: {{ printf "/home/starburst/%s" .path }}
  subPath: {{ .key }}
  readOnly: true
{{- end }}
{{- end }}
{{- if include "starburst.skypilotToken" . }}
- name: skypilot-token
  mountPath: {{ include "starburst.skypilotTokenDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* Cluster-scoped names carry the namespace: two releases never collide. */}}
{{- define "starburst.clusterRoleName" -}}
{{- printf "%s-%s" .Release.Namespace (include "starburst.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The migration as an init container (in-chart PostgreSQL: no database before install). */}}
{{- define "starburst.migrateInitContainer" -}}
{{- include "starburst.hookStep" (dict "root" . "hook" (include "starburst.secretName" .) "dbSecret" (include "starburst.databaseSecretName" .) "step" "db-upgrade") }}
{{- end -}}

{{/* Value combinations the schema cannot express; each message names the fields. */}}
{{- define "starburst.validate" -}}
{{- if not (or .Values.database.url .Values.database.existingSecret .Values.postgresql.enabled) -}}
{{- fail "database: set database.url (postgresql://user:password@host:5432/starburst), database.existingSecret, or postgresql.enabled=true (evaluation only)" -}}
{{- end -}}
{{- $sky := .Values.cloud.skypilot -}}
{{- if and $sky.credentials.existingSecret (not $sky.credentials.files) -}}
{{- fail "cloud.skypilot.credentials.files: list which keys of cloud.skypilot.credentials.existingSecret go where, e.g. [{key: aws-credentials, path: .aws/credentials}]" -}}
{{- end -}}
{{- if and $sky.credentials.files (not $sky.credentials.existingSecret) -}}
{{- fail "cloud.skypilot.credentials.existingSecret: name the Secret holding cloud.skypilot.credentials.files" -}}
{{- end -}}
{{- if and $sky.apiServer.endpoint $sky.apiServer.existingSecret -}}
{{- fail "cloud.skypilot.apiServer.endpoint: set it or cloud.skypilot.apiServer.existingSecret (an endpoint with credentials), not both" -}}
{{- end -}}
{{- if and $sky.apiServer.token.value $sky.apiServer.token.existingSecret -}}
{{- fail "cloud.skypilot.apiServer.token.value: set it or cloud.skypilot.apiServer.token.existingSecret, not both" -}}
{{- end -}}
{{- if and (or $sky.apiServer.token.value $sky.apiServer.token.existingSecret) (not (or $sky.apiServer.endpoint $sky.apiServer.existingSecret)) -}}
{{- fail "cloud.skypilot.apiServer.token: a token is for a SkyPilot API server; set cloud.skypilot.apiServer.endpoint or cloud.skypilot.apiServer.existingSecret" -}}
{{- end -}}
{{- end -}}

{{/* The admin bootstrap as an init container of the controller (in-chart PostgreSQL). */}}
{{- define "starburst.bootstrapInitContainer" -}}
{{- include "starburst.hookStep" (dict "root" . "hook" (include "starburst.secretName" .) "dbSecret" (include "starburst.databaseSecretName" .) "step" "bootstrap-admin") }}
{{- end -}}

{{/* One step of the migration hook: (dict "root" $ "hook" name "dbSecret" name "step" step),
step one of check-prices, db-upgrade, bootstrap-admin. */}}
{{- define "starburst.hookStep" -}}
{{- $root := .root -}}
- name: {{ .step }}
  image: {{ include "starburst.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  {{- if eq .step "check-prices" }}
  command: ["python", "-m", "starburst.pricing"]
  args: ["check", "/etc/starburst/prices.yaml"]
  {{- else if eq .step "db-upgrade" }}
  args: ["db", "upgrade"]
  {{- else }}
  args: ["admin", "bootstrap", "--user", {{ $root.Values.bootstrapAdmin.user | quote }}]
  {{- end }}
  env:
    {{- include "starburst.env" (dict "root" $root "secretName" .dbSecret) | nindent 4 }}
    {{- if eq .step "bootstrap-admin" }}
    - name: STARBURST_BOOTSTRAP_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ $root.Values.bootstrapAdmin.existingSecret | default .hook }}
          key: {{ include "starburst.adminSecretKey" $root }}
    {{- end }}
  resources:
    {{- toYaml $root.Values.migration.resources | nindent 4 }}
  securityContext:
    {{- include "starburst.containerSecurityContext" $root | nindent 4 }}
  volumeMounts:
    {{- include "starburst.volumeMounts" $root | nindent 4 }}
{{- end -}}
