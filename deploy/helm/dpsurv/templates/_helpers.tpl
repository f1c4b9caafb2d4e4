{{/*
Chart name, truncated to the 63 characters a DNS label allows.
*/}}
{{- define "dpsurv.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: release-chart unless the release name already contains the chart
name.
*/}}
{{- define "dpsurv.fullname" -}}
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

{{- define "dpsurv.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dpsurv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dpsurv.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dpsurv.labels" -}}
helm.sh/chart: {{ include "dpsurv.chart" . }}
{{ include "dpsurv.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: stream-processor
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "dpsurv.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dpsurv.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dpsurv.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Name of the Secret holding the PRF key.
*/}}
{{- define "dpsurv.prfKeySecret" -}}
{{- default (printf "%s-prf-key" (include "dpsurv.fullname" .)) .Values.secrets.prfKey.existingSecret }}
{{- end }}

{{/*
Container port, parsed from config.http.listen ("host:port" or ":port").
*/}}
{{- define "dpsurv.httpPort" -}}
{{- $port := regexFind "[0-9]+$" .Values.config.http.listen }}
{{- if not $port }}
{{- fail (printf "config.http.listen %q: want host:port or :port" .Values.config.http.listen) }}
{{- end }}
{{- $port }}
{{- end }}

{{/*
Mount points and file paths of secret material. The rendered config refers to
these paths; values cannot override them.
*/}}
{{- define "dpsurv.keyDir" -}}/var/run/dpsurv/key{{- end }}
{{- define "dpsurv.kafkaDir" -}}/var/run/dpsurv/kafka{{- end }}
{{- define "dpsurv.tlsDir" -}}/var/run/dpsurv/tls{{- end }}

{{/*
True (non-empty) when the Kafka SASL password secret is mounted.
*/}}
{{- define "dpsurv.useSASL" -}}
{{- if .Values.config.kafka.sasl.mechanism }}true{{- end }}
{{- end }}

{{- define "dpsurv.useTLSSecret" -}}
{{- if and .Values.config.kafka.tls.enabled .Values.secrets.tls.existingSecret }}true{{- end }}
{{- end }}

{{/*
Render-time checks that the schema cannot express. Each fails the render with
the value path and the reason.
*/}}
{{- define "dpsurv.validate" -}}
{{- $v := .Values }}
{{- $parts := int $v.input.partitions }}
{{- if $v.autoscaling.enabled }}
{{- if gt (int $v.autoscaling.maxReplicas) $parts }}
{{- fail (printf "autoscaling.maxReplicas (%d) > input.partitions (%d): pods beyond the partition count of %q would sit idle in the consumer group; lower autoscaling.maxReplicas or raise input.partitions after adding partitions to the topic" (int $v.autoscaling.maxReplicas) $parts $v.config.input.topic) }}
{{- end }}
{{- if gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas) }}
{{- fail (printf "autoscaling.minReplicas (%d) > autoscaling.maxReplicas (%d)" (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- end }}
{{- else if gt (int $v.replicaCount) $parts }}
{{- fail (printf "replicaCount (%d) > input.partitions (%d): pods beyond the partition count of %q would sit idle in the consumer group" (int $v.replicaCount) $parts $v.config.input.topic) }}
{{- end }}
{{- $cfgParts := int (default 0 $v.config.input.partitions) }}
{{- if and (gt $cfgParts 0) (ne $cfgParts $parts) }}
{{- fail (printf "config.input.partitions (%d) differs from input.partitions (%d): set both to the partition count of %q" $cfgParts $parts $v.config.input.topic) }}
{{- end }}
{{- if and $v.config.kafka.sasl.mechanism (not $v.secrets.kafka.existingSecret) }}
{{- fail (printf "config.kafka.sasl.mechanism is %q but secrets.kafka.existingSecret is empty: create a Secret holding the SASL password under key %q and name it there" $v.config.kafka.sasl.mechanism $v.secrets.kafka.passwordKey) }}
{{- end }}
{{- if and $v.config.kafka.sasl.mechanism (ne $v.config.kafka.sasl.mechanism "oauthbearer") (not $v.config.kafka.sasl.username) }}
{{- fail "config.kafka.sasl.username is empty but config.kafka.sasl.mechanism is set" }}
{{- end }}
{{- if and $v.config.kafka.tls.enabled $v.secrets.tls.existingSecret }}
{{- if and (not $v.secrets.tls.caKey) (not $v.secrets.tls.certKey) }}
{{- fail "secrets.tls.existingSecret is set but secrets.tls.caKey and secrets.tls.certKey are both empty: nothing to mount" }}
{{- end }}
{{- end }}
{{- if ne (empty $v.secrets.tls.certKey) (empty $v.secrets.tls.keyKey) }}
{{- fail "secrets.tls.certKey and secrets.tls.keyKey must be set together (client certificate and its key)" }}
{{- end }}
{{- if and $v.secrets.tls.certKey (not $v.secrets.tls.existingSecret) }}
{{- fail "secrets.tls.certKey is set but secrets.tls.existingSecret is empty" }}
{{- end }}
{{- $time := $v.config.sanitizers.time }}
{{- if and (eq $time.mechanism "te") (hasKey $time "epsilon") (hasKey $time "target_loss") }}
{{- fail "config.sanitizers.time: set epsilon or target_loss, not both (to use target_loss, also set config.sanitizers.time.epsilon to null)" }}
{{- end }}
{{- $host := regexReplaceAll ":[0-9]+$" $v.config.http.listen "" | trimPrefix "[" | trimSuffix "]" }}
{{- if or (eq $host "localhost") (hasPrefix "127." $host) (eq $host "::1") }}
{{- fail (printf "config.http.listen %q: a loopback address is unreachable for the kubelet probes and Prometheus; use \":<port>\" (every interface of the pod)" $v.config.http.listen) }}
{{- end }}
{{- $fitArrow := default (printf "%s.arrow" $v.config.output.fit_topic) $v.config.output.fit_arrow_topic }}
{{- $topics := dict "config.input.topic" $v.config.input.topic "config.output.sanitized_topic" $v.config.output.sanitized_topic "config.output.dead_letter_topic" $v.config.output.dead_letter_topic "config.output.fit_topic" $v.config.output.fit_topic "config.output.fit_arrow_topic" $fitArrow "config.ledger.topic" $v.config.ledger.topic "config.ledger.topic + .state" (printf "%s.state" $v.config.ledger.topic) "config.ledger.topic + .lease" (printf "%s.lease" $v.config.ledger.topic) }}
{{- $seen := dict }}
{{- range $path := keys $topics | sortAlpha }}
{{- $t := index $topics $path }}
{{- if hasKey $seen $t }}
{{- fail (printf "%s and %s are both %q: the input, sanitized, dead-letter, fit, fit-arrow, ledger, ledger-state and ledger-lease topics must be distinct (raw and sanitized records must never share a topic)" (index $seen $t) $path $t) }}
{{- end }}
{{- $_ := set $seen $t $path }}
{{- end }}
{{- end }}

{{/*
PromQL label matchers selecting this release's series (no braces).
*/}}
{{- define "dpsurv.promSelector" -}}
{{- if .Values.prometheusRule.selector }}
{{- .Values.prometheusRule.selector | trimSuffix "," }}
{{- else }}
{{- printf "namespace=%q,job=%q" .Release.Namespace (include "dpsurv.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Sorted unique ports of config.kafka.brokers, as a JSON list of numbers.
*/}}
{{- define "dpsurv.brokerPorts" -}}
{{- $ports := dict }}
{{- range .Values.config.kafka.brokers }}
{{- $_ := set $ports (regexFind "[0-9]+$" .) true }}
{{- end }}
{{- $out := list }}
{{- range keys $ports | sortAlpha }}
{{- $out = append $out (int .) }}
{{- end }}
{{- toJson $out }}
{{- end }}
