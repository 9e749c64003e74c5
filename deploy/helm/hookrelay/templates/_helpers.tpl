{{/* Names are <release>-hookrelay (or the release name when it holds "hookrelay"), cut to 51 characters so that a role suffix still fits in 63. */}}
{{- define "hookrelay.fullname" -}}
{{- if contains "hookrelay" .Release.Name -}}
{{- .Release.Name | trunc 51 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-hookrelay" .Release.Name | trunc 51 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hookrelay.selectorLabels" -}}
app.kubernetes.io/name: hookrelay
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hookrelay.labels" -}}
{{ include "hookrelay.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "hookrelay.secretName" -}}
{{- .Values.existingSecret | default (printf "%s-config" (include "hookrelay.fullname" .)) -}}
{{- end -}}

{{- define "hookrelay.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "hookrelay.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "hookrelay.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Checks what no default can supply; rendering fails with the value to set. */}}
{{- define "hookrelay.validate" -}}
{{- if not .Values.s3.endpoint -}}
{{- fail "s3.endpoint is required: the embedded S3 store serves only its own process, and the chart runs several (point it at MinIO, S3, GCS, R2 ...)" -}}
{{- end -}}
{{- if not .Values.existingSecret -}}
{{- if not .Values.secret.databaseURL -}}
{{- fail "secret.databaseURL (or existingSecret) is required" -}}
{{- end -}}
{{- if lt (len .Values.secret.adminToken) 16 -}}
{{- fail "secret.adminToken (or existingSecret) is required, at least 16 characters (hookrelay token prints one)" -}}
{{- end -}}
{{- if not .Values.secret.encryptionKey -}}
{{- fail "secret.encryptionKey (or existingSecret) is required: the base64 of 32 random bytes (hookrelay encryption-key prints one)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The environment every container gets: the Secret's keys, the S3 store, .Values.env, then the role's env. */}}
{{- define "hookrelay.env" -}}
{{- $secret := include "hookrelay.secretName" .root -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: DATABASE_URL}
- name: HOOKRELAY_ADMIN_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: HOOKRELAY_ADMIN_TOKEN}
- name: HOOKRELAY_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: HOOKRELAY_ENCRYPTION_KEY}
- name: HOOKRELAY_ENCRYPTION_KEYS_OLD
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: HOOKRELAY_ENCRYPTION_KEYS_OLD, optional: true}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: AWS_ACCESS_KEY_ID, optional: true}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: AWS_SECRET_ACCESS_KEY, optional: true}
- name: HOOKRELAY_S3_ENDPOINT
  value: {{ .root.Values.s3.endpoint | quote }}
- name: HOOKRELAY_S3_BUCKET
  value: {{ .root.Values.s3.bucket | quote }}
- name: HOOKRELAY_S3_REGION
  value: {{ .root.Values.s3.region | quote }}
{{- $env := merge (deepCopy (.extra | default dict)) .root.Values.env }}
{{- range $k, $v := $env }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/* What the role pods and the migration pod share. No pod talks to the Kubernetes API. */}}
{{- define "hookrelay.podSpecCommon" -}}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  # The root file system is read-only; these are the only writable paths.
  - name: data
    emptyDir: {sizeLimit: 64Mi}
  - name: tmp
    emptyDir: {sizeLimit: 64Mi}
{{- end -}}

{{- define "hookrelay.volumeMounts" -}}
volumeMounts:
  - {name: data, mountPath: /data}
  - {name: tmp, mountPath: /tmp}
{{- end -}}
