from django import forms


class NotificationForm(forms.Form):
    email_enabled = forms.BooleanField(
        required=False, label="E-mail me when a submission of one of my teams finishes, fails or is published"
    )


class AddressForm(forms.Form):
    email = forms.EmailField(
        required=False,
        label="Send notifications to",
        help_text="We send a link to this address; it is used once you open it. Leave it empty to remove your address.",
    )
