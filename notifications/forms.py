from django import forms


class NotificationForm(forms.Form):
    email_enabled = forms.BooleanField(
        required=False, label="E-mail me when a submission of one of my teams finishes, fails or is published"
    )
